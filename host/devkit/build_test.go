package devkit_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/devkit"
)

func TestBuildShowsStepsAndChecksTheModule(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, scaffolded(t))
	if err := os.Remove(filepath.Join(dir, "greeter.wasm")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "custom.wasm")
	var progress strings.Builder
	res, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{Progress: &progress, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	// Not a terminal: one plain line when each step starts and ends.
	re := regexp.MustCompile(`^\[1/3\] read plugin\.yaml \.\.\.\n\[1/3\] read plugin\.yaml done \(\S+\)\n` +
		`\[2/3\] compile greeter \(go build, wasip1/wasm\) \.\.\.\n\[2/3\] compile greeter \(go build, wasip1/wasm\) done \(\S+\)\n` +
		`\[3/3\] check custom\.wasm \.\.\.\n\[3/3\] check custom\.wasm done \(\S+\)\n$`)
	if !re.MatchString(progress.String()) {
		t.Errorf("progress output:\n%s", progress.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("module not written to --out: %v", err)
	}
	sum := sha256.Sum256(data)
	if res.Wasm != out || res.Size != len(data) || res.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("result %s/%d/%s does not describe the written module", res.Wasm, res.Size, res.SHA256)
	}
	if !res.Info.HasExport("greeter_hello") {
		t.Errorf("exports %v lack the skill function", res.Info.Exports)
	}
	if _, err := os.Stat(filepath.Join(dir, "greeter.wasm")); err == nil {
		t.Error("with Out set, the manifest's wasm path was written too")
	}
}

func TestBuildReportsCompilerErrors(t *testing.T) {
	t.Parallel()
	needGo(t)
	dir := copyPlugin(t, scaffolded(t))
	_ = os.Remove(filepath.Join(dir, "greeter.wasm"))
	mustEdit(t, filepath.Join(dir, "logic.go"), `return HelloOut{Greeting: greeting + ", " + name + end}, nil`, `return HelloOut{Greeting: undefinedThing}, nil`)
	var progress strings.Builder
	_, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{Progress: &progress})
	var be *devkit.BuildError
	if !errors.As(err, &be) || !strings.Contains(be.Output, "undefined: undefinedThing") {
		t.Fatalf("error = %v, want a BuildError quoting the compiler", err)
	}
	if !strings.Contains(progress.String(), "[2/3] compile greeter (go build, wasip1/wasm) FAILED") ||
		!strings.Contains(progress.String(), "undefined: undefinedThing") {
		t.Errorf("progress does not show the failed step and the compiler output:\n%s", progress.String())
	}
	if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "exit status 1: ./logic.go:") {
		t.Errorf("error %q: want one line quoting the first compiler message", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "greeter.wasm")); err == nil {
		t.Error("a failed build left a module behind")
	}
}

func TestBuildRefusesUnexportedSkill(t *testing.T) {
	t.Parallel()
	needGo(t)
	dir := copyPlugin(t, scaffolded(t))
	mustEdit(t, filepath.Join(dir, "plugin.yaml"), "function: greeter_hello", "function: greeter_missing")
	_, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), `function "greeter_missing" is not exported; add //go:wasmexport greeter_missing`) {
		t.Fatalf("error = %v, want the missing export named with the fix", err)
	}
}

func TestBuildRefusesBadManifestBeforeCompiling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "plugin.yaml"), "name: x\n")
	var progress strings.Builder
	_, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{Progress: &progress})
	if err == nil || !strings.Contains(err.Error(), "version: is required") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error = %q, want the manifest problems on one line", err)
	}
	if strings.Contains(progress.String(), "compile") {
		t.Errorf("compiled despite a bad manifest:\n%s", progress.String())
	}
}
