package devkit

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// SDKModule is the module path of the Go plugin SDK.
const SDKModule = "github.com/skillhost/skillhost/sdk"

// goScaffold prepares a Go scaffold: it picks the SDK (a checkout's folder,
// or a copy of opts.SDK written into dir/sdk by the returned extra step)
// and fills the go.mod values.
func goScaffold(opts NewOptions, dir string, data *tmplData, sc *Scaffold) ([]scaffoldFile, func() error, error) {
	sdkDir := opts.SDKPath
	if sdkDir == "" {
		sdkDir = checkoutSDK(dir)
	}
	var (
		src   fs.FS
		extra func() error
	)
	data.SDKModule = SDKModule
	if sdkDir != "" {
		abs, err := filepath.Abs(sdkDir)
		if err != nil {
			return nil, nil, fmt.Errorf("new: SDK path: %w", err)
		}
		if !isSDK(abs) {
			return nil, nil, fmt.Errorf("new: %s has no go.mod of module %s (check --sdk)", abs, SDKModule)
		}
		src, sc.SDK = os.DirFS(abs), abs
		// Relative inside the same tree (it survives moving the tree),
		// absolute elsewhere.
		data.SDKReplace = abs
		if within(filepath.Dir(abs), dir) {
			if rel, err := filepath.Rel(dir, abs); err == nil {
				data.SDKReplace = filepath.ToSlash(rel)
			}
		}
		data.SDKNote = "// The SDK is the one of the skillhost source tree at " + data.SDKReplace + "."
	} else {
		if opts.SDK == nil {
			return nil, nil, fmt.Errorf("new: no SDK to copy and no skillhost checkout above %s; pass --sdk DIR (a folder holding the SDK's go.mod)", dir)
		}
		src, sc.SDK = opts.SDK, "./sdk (a copy of the SDK of skillhost "+data.Version+")"
		data.SDKReplace = "./sdk"
		data.SDKNote = "// The skillhost SDK is copied into ./sdk (by skillhost " + data.Version + ` "plugin new"), so this
// folder builds anywhere with Go and the module proxy (for github.com/extism/go-pdk).`
		extra = func() error {
			if err := copySDK(src, filepath.Join(dir, "sdk")); err != nil {
				return err
			}
			sc.Files = append(sc.Files, "sdk/")
			return nil
		}
	}
	var err error
	if data.GoVersion, data.PDKVersion, err = sdkVersions(src); err != nil {
		return nil, nil, err
	}
	sum, err := fs.ReadFile(src, "go.sum")
	if err != nil {
		return nil, nil, fmt.Errorf("new: the SDK's go.sum: %w", err)
	}
	// The scaffold needs the SDK's checksums (go-pdk) to build without
	// `go mod tidy`; go.sum is copied, not rendered.
	files := append(append([]scaffoldFile(nil), goFiles...), scaffoldFile{name: "go.sum", text: escapeTemplate(string(sum))})
	return files, extra, nil
}

// escapeTemplate makes s render as itself with [[ ]] delimiters.
func escapeTemplate(s string) string {
	return strings.ReplaceAll(s, "[[", `[[ "[[" ]]`)
}

// checkoutSDK returns the sdk/ folder of the skillhost checkout dir lies
// in, or "".
func checkoutSDK(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if cand := filepath.Join(d, "sdk"); isSDK(cand) {
			return cand
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// isSDK reports whether dir/go.mod declares the SDK module.
func isSDK(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && modulePath(data) == SDKModule
}

// modulePath is the module directive of a go.mod.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// sdkVersions reads the go directive and the go-pdk version from the SDK's
// go.mod, so the scaffold matches the SDK it builds against.
func sdkVersions(src fs.FS) (goVer, pdkVer string, err error) {
	data, err := fs.ReadFile(src, "go.mod")
	if err != nil {
		return "", "", fmt.Errorf("new: the SDK's go.mod: %w", err)
	}
	if modulePath(data) != SDKModule {
		return "", "", fmt.Errorf("new: the SDK's go.mod is not module %s", SDKModule)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "go":
			goVer = f[1]
		case len(f) >= 2 && f[0] == "github.com/extism/go-pdk":
			pdkVer = f[1]
		case len(f) >= 3 && f[0] == "require" && f[1] == "github.com/extism/go-pdk":
			pdkVer = f[2]
		}
	}
	if goVer == "" || pdkVer == "" {
		return "", "", fmt.Errorf("new: the SDK's go.mod lacks a go directive or a github.com/extism/go-pdk requirement")
	}
	return goVer, pdkVer, nil
}

// copySDK writes the SDK's files (tests and testdata left out) under dst.
func copySDK(src fs.FS, dst string) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return fmt.Errorf("new: copying the SDK: %w", err)
		case d.IsDir() && d.Name() == "testdata":
			return fs.SkipDir
		case d.IsDir() || strings.HasSuffix(p, "_test.go"):
			return nil
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return fmt.Errorf("new: copying the SDK: %w", err)
		}
		return writeFile(filepath.Join(dst, filepath.FromSlash(path.Clean(p))), data)
	})
}
