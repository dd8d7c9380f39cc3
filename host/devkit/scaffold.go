package devkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

// SDKModule is the module path of the plugin SDK.
const SDKModule = "github.com/skillhost/skillhost/sdk"

// SDKEnv names the environment variable that points New at the SDK folder.
const SDKEnv = "SKILLHOST_SDK"

// maxScaffoldName keeps "<name>_hello" within the 64-character skill id cap.
const maxScaffoldName = 58

var reName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ErrInvalidName is wrapped by New's error for a bad plugin name.
var ErrInvalidName = errors.New("invalid plugin name")

// NewOptions configure New.
type NewOptions struct {
	// Name is the plugin name: [a-z0-9][a-z0-9-]*, at most 58 characters.
	Name string
	// Dir is the folder to create. Optional. Default: Name, under WorkDir.
	Dir string
	// SDKPath is the folder of the SDK module (the one holding sdk/go.mod).
	// Optional. Default: $SKILLHOST_SDK, else the first sdk/go.mod of
	// module github.com/skillhost/skillhost/sdk found walking up from Dir,
	// then from WorkDir.
	SDKPath string
	// WorkDir resolves a relative Dir. Optional. Default: the current
	// directory.
	WorkDir string
}

// Scaffold describes the created plugin.
type Scaffold struct {
	Dir     string   // absolute path of the new plugin folder
	Skill   string   // id of its one skill
	SDKPath string   // SDK folder the go.mod replace points at
	Files   []string // created files, relative to Dir
}

// tmplData fills the templates.
type tmplData struct {
	Name, Skill, SDKModule, SDKReplace, GoVersion, PDKVersion string
}

// New scaffolds a plugin folder that builds and passes `plugin test` as is:
// main.go (the wasm export), logic.go and logic_test.go (the skill as a pure
// function and its test), nowasm.go, plugin.yaml, go.mod, go.sum and
// .gitignore. It refuses an invalid name and an existing non-empty folder.
func New(opts NewOptions) (*Scaffold, error) {
	if err := checkName(opts.Name); err != nil {
		return nil, err
	}
	wd := opts.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("new: %w", err)
		}
	}
	dir := opts.Dir
	if dir == "" {
		dir = opts.Name
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(wd, dir)
	}
	dir = filepath.Clean(dir)
	if err := checkEmptyDir(dir); err != nil {
		return nil, err
	}
	sdk, err := findSDK(opts.SDKPath, dir, wd)
	if err != nil {
		return nil, err
	}
	data, err := templateData(opts.Name, dir, sdk)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	sc := &Scaffold{Dir: dir, Skill: data.Skill, SDKPath: sdk}
	for _, f := range scaffoldFiles {
		var b bytes.Buffer
		if err := template.Must(template.New(f.name).Delims("[[", "]]").Parse(f.text)).Execute(&b, data); err != nil {
			return nil, fmt.Errorf("new: render %s: %w", f.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("new: %w", err)
		}
		sc.Files = append(sc.Files, f.name)
	}
	sum, err := sdkGoSum(sdk)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	sc.Files = append(sc.Files, "go.sum")
	return sc, nil
}

// checkName validates a plugin name for scaffolding.
func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidName)
	case len(name) > maxScaffoldName:
		return fmt.Errorf("%w %q: at most %d characters", ErrInvalidName, name, maxScaffoldName)
	case !reName.MatchString(name):
		return fmt.Errorf("%w %q: use lower-case letters, digits and '-', starting with a letter or digit", ErrInvalidName, name)
	}
	return nil
}

// checkEmptyDir refuses a path that exists and is a file or a non-empty
// folder.
func checkEmptyDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("new: %w", err)
	case !st.IsDir():
		return fmt.Errorf("new: %s exists and is not a folder", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("new: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("new: %s is not empty (%d entries); choose another --dir", dir, len(ents))
	}
	return nil
}

// findSDK locates the SDK folder: explicit, then $SKILLHOST_SDK, then a walk
// up from each start folder.
func findSDK(explicit string, starts ...string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv(SDKEnv)
	}
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return "", fmt.Errorf("new: SDK path: %w", err)
		}
		if !isSDK(abs) {
			return "", fmt.Errorf("new: %s has no go.mod of module %s (check --sdk or $%s)", abs, SDKModule, SDKEnv)
		}
		return abs, nil
	}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			if cand := filepath.Join(d, "sdk"); isSDK(cand) {
				return cand, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("new: cannot find the skillhost SDK (a folder sdk/ with the go.mod of %s) above %s; "+
		"run this inside a skillhost checkout or set $%s to its sdk folder", SDKModule, starts[len(starts)-1], SDKEnv)
}

// isSDK reports whether dir/go.mod declares the SDK module.
func isSDK(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == SDKModule
		}
	}
	return false
}

// templateData computes the template values.
func templateData(name, dir, sdk string) (tmplData, error) {
	goVer, pdkVer, err := sdkVersions(sdk)
	if err != nil {
		return tmplData{}, err
	}
	// Relative inside the checkout (it survives moving the checkout),
	// absolute elsewhere (it survives moving the plugin).
	replace := sdk
	if within(filepath.Dir(sdk), dir) {
		if rel, err := filepath.Rel(dir, sdk); err == nil {
			replace = filepath.ToSlash(rel)
		}
	}
	return tmplData{
		Name:       name,
		Skill:      strings.ReplaceAll(name, "-", "_") + "_hello",
		SDKModule:  SDKModule,
		SDKReplace: replace,
		GoVersion:  goVer,
		PDKVersion: pdkVer,
	}, nil
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// sdkVersions reads the go directive and the go-pdk version from the SDK's
// go.mod, so the scaffold matches the SDK it builds against.
func sdkVersions(sdk string) (goVer, pdkVer string, err error) {
	data, err := os.ReadFile(filepath.Join(sdk, "go.mod"))
	if err != nil {
		return "", "", fmt.Errorf("new: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
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
		return "", "", fmt.Errorf("new: %s/go.mod lacks a go directive or a github.com/extism/go-pdk requirement", sdk)
	}
	return goVer, pdkVer, nil
}

// sdkGoSum returns the SDK's go.sum: the scaffold needs the same checksums
// (go-pdk) to build without `go mod tidy`.
func sdkGoSum(sdk string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(sdk, "go.sum"))
	if err != nil {
		return nil, fmt.Errorf("new: the SDK's go.sum: %w", err)
	}
	return data, nil
}
