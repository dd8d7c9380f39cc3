package devkit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	// GOWORK, so it may override them). Optional.
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

// BuildError is a failed compilation: the toolchain's exit status and
// (capped) output.
type BuildError struct {
	Dir    string
	Output string // compiler output, at most 16 KiB
	Err    error
}

// Error implements error on one line: the toolchain's status and the first
// message of its output (package headers skipped) (Build also writes the whole output to
// BuildOptions.Progress).
func (e *BuildError) Error() string {
	first := ""
	for line := range strings.SplitSeq(e.Output, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "# ") {
			first = line
			break
		}
	}
	if first == "" {
		return fmt.Sprintf("build %s: go build: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("build %s: go build: %v: %s", e.Dir, e.Err, first)
}

// Unwrap returns the toolchain error.
func (e *BuildError) Unwrap() error { return e.Err }

// Build compiles the Go plugin in dir for GOOS=wasip1 GOARCH=wasm
// (-buildmode=c-shared, -trimpath) into the manifest's wasm path, then checks
// that the module exports every skill's function and imports only what the
// host provides. GOWORK is off: the folder builds from its own go.mod.
func Build(ctx context.Context, dir string, opts BuildOptions) (*BuildResult, error) {
	start := time.Now()
	steps := NewSteps(opts.Progress, 3)
	res, err := build(ctx, dir, opts, steps)
	steps.End(err)
	if err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

func build(ctx context.Context, dir string, opts BuildOptions, steps *Steps) (*BuildResult, error) {
	steps.Start("read " + plugin.ManifestFile)
	m, err := plugin.LoadManifest(dir)
	if err != nil {
		return nil, oneLine(err)
	}
	out := opts.Out
	if out == "" {
		out = filepath.Join(dir, m.Wasm)
	}
	out, err = filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}

	steps.Start("compile " + m.Name + " (go build, wasip1/wasm)")
	if err := goBuild(ctx, dir, out, opts); err != nil {
		var be *BuildError
		if errors.As(err, &be) && opts.Progress != nil {
			steps.End(err)
			fmt.Fprintln(opts.Progress, strings.TrimRight(be.Output, "\n"))
		}
		return nil, err
	}

	steps.Start("check " + filepath.Base(out))
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
			problems = append(problems, fmt.Errorf("skills[%d] (%s): function %q is not exported; add //go:wasmexport %s",
				i, s.ID, s.Function, s.Function))
		}
	}
	problems = append(problems, checkImports(info)...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("build: %s: %w", out, &lineError{errs: problems})
	}
	sum := sha256.Sum256(wasm)
	return &BuildResult{Manifest: m, Wasm: out, Size: len(wasm), SHA256: hex.EncodeToString(sum[:]), Info: info}, nil
}

// goBuild runs the toolchain.
func goBuild(ctx context.Context, dir, out string, opts BuildOptions) error {
	goBin := opts.GoBin
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "CGO_ENABLED=0")
	cmd.Env = append(cmd.Env, opts.Env...)
	var buf cappedBuffer
	buf.max = maxToolOutput
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("build %s: %w", dir, ctx.Err())
		}
		return &BuildError{Dir: dir, Output: buf.String(), Err: err}
	}
	return nil
}

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
