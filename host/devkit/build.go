package devkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// maxToolOutput caps the compiler output kept for an error message.
const maxToolOutput = 16 << 10

// BuildOptions configure Build.
type BuildOptions struct {
	// Progress receives the step display (see Steps). Optional. Default:
	// silent.
	Progress io.Writer
	// Out is where the module is written. Optional. Default: the manifest's
	// wasm path inside the plugin folder.
	Out string
	// GoBin is the go command. Optional. Default: "go" from PATH.
	GoBin string
	// Env is added to the toolchain's environment (after GOOS, GOARCH and
	// GOWORK for Go, so it may override them). Optional.
	Env []string
}

// BuildResult describes a built module.
type BuildResult struct {
	Manifest *plugin.Manifest
	Wasm     string // path of the module written
	Size     int
	SHA256   string // lowercase hex
	Info     sandbox.ModuleInfo
	Duration time.Duration // whole build, checks included
}

// Build compiles the plugin in dir into the manifest's wasm path (or
// BuildOptions.Out), then checks that the module exports every skill's
// function and imports only what the host provides. It recognises the
// folder's language by its files:
//
//	*.go, go.mod  Go: go build -buildmode=c-shared -trimpath with GOOS=wasip1
//	              GOARCH=wasm and GOWORK=off (the folder builds from its own go.mod)
//	package.json  npm (AssemblyScript): npm install when node_modules is missing,
//	              then npm run build, whose output must be the manifest's wasm path
//	*.wat         WebAssembly text: wat2wasm <wasm stem>.wat (or the only .wat)
//
// Any other folder (Rust's Cargo.toml, …) is refused with ErrCannotBuild:
// build it with its own toolchain, then run Validate. So is a missing tool.
func Build(ctx context.Context, dir string, opts BuildOptions) (*BuildResult, error) {
	start := time.Now()
	m, err := plugin.LoadManifest(dir)
	if err != nil {
		return nil, oneLine(err)
	}
	out := opts.Out
	if out == "" {
		out = filepath.Join(dir, m.Wasm)
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	tc, err := detectToolchain(dir, m.Name, m.Wasm, out, opts)
	if err != nil {
		return nil, err
	}
	show := newSteps(opts.Progress, len(tc.steps)+2)
	show.Start("read " + plugin.ManifestFile) // read above; shown for the full picture
	res, err := build(ctx, dir, m, out, tc, opts, show)
	show.End(err)
	if err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

func build(ctx context.Context, dir string, m *plugin.Manifest, out string, tc *toolchain, opts BuildOptions, show *steps) (*BuildResult, error) {
	var before os.FileInfo
	if tc.fixedOut != "" {
		before, _ = os.Stat(tc.fixedOut)
	}
	for _, st := range tc.steps {
		show.Start(st.title)
		if err := st.run(ctx, dir, opts.Env); err != nil {
			var be *BuildError
			if errors.As(err, &be) && opts.Progress != nil {
				show.End(err)
				fmt.Fprintln(opts.Progress, strings.TrimRight(be.Output, "\n"))
			}
			return nil, err
		}
	}
	if tc.fixedOut != "" {
		if err := placeModule(tc.fixedOut, out, before); err != nil {
			return nil, fmt.Errorf("build %s: %w", dir, err)
		}
	}

	show.Start("check " + filepath.Base(out))
	wasm, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	info, err := sandbox.Inspect(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("build: %s: %w", out, err)
	}
	var problems []error
	for i, s := range m.Skills {
		if !info.HasExport(s.Function) {
			problems = append(problems, fmt.Errorf("skills[%d] (%s): function %q is not exported; %s",
				i, s.ID, s.Function, exportHint(tc.lang, s.Function)))
		}
	}
	importProblems, err := checkImports(ctx, info)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	problems = append(problems, importProblems...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("build: %s: %w", out, &lineError{errs: problems})
	}
	sum := sha256.Sum256(wasm)
	return &BuildResult{Manifest: m, Wasm: out, Size: len(wasm), SHA256: hex.EncodeToString(sum[:]), Info: info}, nil
}

// exportHint says how a language exports a function.
func exportHint(lang, fn string) string {
	switch lang {
	case "Go":
		return "add //go:wasmexport " + fn
	case "WAT":
		return fmt.Sprintf(`add (export %q) to its func`, fn)
	default:
		return "export a function named " + fn
	}
}

// placeModule checks that a tool wrote the module at built (a new file, or
// one changed since before) and copies it to out when they differ.
func placeModule(built, out string, before os.FileInfo) error {
	st, err := os.Stat(built)
	if err != nil || before != nil && st.ModTime().Equal(before.ModTime()) && st.Size() == before.Size() {
		return fmt.Errorf("the build did not write the manifest's module %s (its output must be the manifest's wasm path)", built)
	}
	data, err := os.ReadFile(built)
	if err != nil {
		return err
	}
	if built == out {
		return nil
	}
	return os.WriteFile(out, data, 0o644)
}
