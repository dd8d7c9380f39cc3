package devkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrCannotBuild is wrapped by Build's error for a folder whose language it
// does not build (and for a missing toolchain): build the module with your
// own toolchain, then run `plugin validate`.
var ErrCannotBuild = errors.New("cannot build this plugin folder")

// A toolchain builds one kind of plugin folder, recognised by its files.
type toolchain struct {
	lang  string // "Go", "npm", "WAT"
	steps []toolStep
	// out is where the tool writes the module when it cannot be told
	// (npm's build script): Build copies it to the requested path.
	fixedOut string
}

// toolStep is one command of a build.
type toolStep struct {
	title string // shown as "[n/N] title"
	tool  string // executable, looked up in PATH
	args  []string
	env   []string
	hint  string // how to get the tool
}

// Install hints for the tools Build runs.
const (
	goHint       = "install Go 1.26 or later (https://go.dev/dl/)"
	npmHint      = "install Node.js with npm (Debian/Ubuntu: apt-get install -y nodejs npm)"
	wat2wasmHint = "install wabt (Debian/Ubuntu: apt-get install -y wabt; macOS: brew install wabt; or: npm install -g wabt)"
)

// detectToolchain recognises the plugin folder's language: go.mod or .go
// files (Go),
// package.json (npm: AssemblyScript and other npm-built plugins, `npm run
// build`), or .wat sources (wat2wasm). name is the plugin's name and wasm
// the manifest's module path (relative to dir); out is the absolute path to
// write.
func detectToolchain(dir, name, wasm, out string, opts BuildOptions) (*toolchain, error) {
	has := func(f string) bool { _, err := os.Stat(filepath.Join(dir, f)); return err == nil }
	goFiles, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	switch {
	case has("go.mod") || len(goFiles) > 0: // a package of a module (plugins/text) or a module
		goBin := opts.GoBin
		if goBin == "" {
			goBin = "go"
		}
		return &toolchain{lang: "Go", steps: []toolStep{{
			title: "compile " + name + " (go build, wasip1/wasm)",
			tool:  goBin, args: []string{"build", "-buildmode=c-shared", "-trimpath", "-o", out, "."},
			env:  []string{"GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "CGO_ENABLED=0"},
			hint: goHint,
		}}}, nil
	case has("package.json"):
		return npmToolchain(dir, name, wasm)
	}
	if wats, _ := filepath.Glob(filepath.Join(dir, "*.wat")); len(wats) > 0 {
		src := strings.TrimSuffix(wasm, filepath.Ext(wasm)) + ".wat"
		if !has(src) {
			if len(wats) > 1 {
				return nil, fmt.Errorf("build %s: %w: %d .wat files and none named %s (after the manifest's wasm)", dir, ErrCannotBuild, len(wats), src)
			}
			src = filepath.Base(wats[0])
		}
		return &toolchain{lang: "WAT", steps: []toolStep{{
			title: "compile " + name + " (wat2wasm " + src + ")",
			tool:  "wat2wasm", args: []string{src, "-o", out},
			hint: wat2wasmHint,
		}}}, nil
	}
	if has("Cargo.toml") {
		return nil, cannotBuild(dir, wasm, "a Rust plugin (Cargo.toml)", "cargo build --release --target wasm32-unknown-unknown, ")
	}
	return nil, cannotBuild(dir, wasm, "this folder: it has no Go files, package.json (npm) or .wat file (WAT)", "")
}

func cannotBuild(dir, wasm, what, example string) error {
	return fmt.Errorf("build %s: %w: skillhost plugin build cannot build %s; build it with your toolchain (%scopying the module to %s), then run: skillhost plugin validate %s",
		dir, ErrCannotBuild, what, example, filepath.Join(dir, wasm), dir)
}

// npmToolchain runs `npm run build` (after `npm install` when the packages
// are not installed yet); the build script writes the manifest's module.
func npmToolchain(dir, name, wasm string) (*toolchain, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", dir, err)
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return nil, fmt.Errorf("build %s: package.json: %w", dir, err)
	}
	if pkg.Scripts["build"] == "" {
		return nil, fmt.Errorf("build %s: %w: package.json has no \"build\" script (it should compile %s)", dir, ErrCannotBuild, wasm)
	}
	quiet := []string{"npm_config_fund=false", "npm_config_audit=false", "npm_config_update_notifier=false"}
	tc := &toolchain{lang: "npm", fixedOut: filepath.Join(dir, wasm)}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		tc.steps = append(tc.steps, toolStep{
			title: "install npm packages (npm install)", tool: "npm",
			args: []string{"install", "--prefer-offline", "--no-audit", "--no-fund"}, env: quiet, hint: npmHint,
		})
	}
	tc.steps = append(tc.steps, toolStep{
		title: "compile " + name + " (npm run build)", tool: "npm",
		args: []string{"run", "build", "--silent"}, env: quiet, hint: npmHint,
	})
	return tc, nil
}

// run runs one step in dir, its output captured (capped).
func (st toolStep) run(ctx context.Context, dir string, extraEnv []string) error {
	path, err := exec.LookPath(st.tool)
	if err != nil {
		return fmt.Errorf("build %s: %w: %s is not on PATH: %s, or build the module with your own toolchain, then run: skillhost plugin validate %s",
			dir, ErrCannotBuild, st.tool, st.hint, dir)
	}
	cmd := exec.CommandContext(ctx, path, st.args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), st.env...), extraEnv...)
	var buf cappedBuffer
	buf.max = maxToolOutput
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("build %s: %w", dir, ctx.Err())
		}
		return &BuildError{Dir: dir, Tool: filepath.Base(st.tool) + " " + st.args[0], Output: buf.String(), Err: err}
	}
	return nil
}

// BuildError is a failed toolchain run: its command, exit status and
// (capped) output.
type BuildError struct {
	Dir    string
	Tool   string // e.g. "go build", "npm run", "wat2wasm x.wat"
	Output string // the tool's output, at most 16 KiB
	Err    error
}

// Error implements error on one line: the tool, its status and the first
// message of its output (Go package headers skipped) (Build also writes the
// whole output to BuildOptions.Progress).
func (e *BuildError) Error() string {
	first := ""
	for line := range strings.SplitSeq(e.Output, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "# ") && !strings.HasPrefix(line, "> ") {
			first = line
			break
		}
	}
	if first == "" {
		return fmt.Sprintf("build %s: %s: %v", e.Dir, e.Tool, e.Err)
	}
	return fmt.Sprintf("build %s: %s: %v: %s", e.Dir, e.Tool, e.Err, first)
}

// Unwrap returns the toolchain error.
func (e *BuildError) Unwrap() error { return e.Err }

// cappedBuffer keeps the first max bytes written and counts the rest.
type cappedBuffer struct {
	bytes.Buffer
	max     int
	dropped int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.Len()
	if room < len(p) {
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		b.dropped += len(p) - max(room, 0)
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

func (b *cappedBuffer) String() string {
	if b.dropped > 0 {
		return b.Buffer.String() + fmt.Sprintf("\n… (%d more bytes of output)", b.dropped)
	}
	return b.Buffer.String()
}
