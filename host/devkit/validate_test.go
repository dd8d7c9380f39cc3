package devkit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/devkit"
)

// wantProblems checks that every fragment appears in some problem.
func wantProblems(t *testing.T, rep *devkit.Report, fragments ...string) {
	t.Helper()
	if rep.OK() {
		t.Fatalf("report OK, want problems containing %q", fragments)
	}
	all := strings.Join(rep.Problems, "\n")
	for _, f := range fragments {
		if !strings.Contains(all, f) {
			t.Errorf("no problem mentions %q; problems:\n%s", f, all)
		}
	}
}

func mustValidate(t *testing.T, dir string) *devkit.Report {
	t.Helper()
	rep, err := devkit.Validate(context.Background(), dir, devkit.ValidateOptions{CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestValidateListsEveryManifestProblem: one bad manifest, every problem
// reported (not just the first), each naming its field.
func TestValidateListsEveryManifestProblem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "plugin.yaml"), `name: Bad_Name
version: one
wasm: ../outside.wasm
limits:
  timeout: forever
skills:
  - id: s1
    description: d
    examples: ['{"n":"not a number"}', 'not json']
    input_schema: {type: object, properties: {n: {type: integer}}}
    output_schema: {type: nonsense}
`)
	rep := mustValidate(t, dir)
	wantProblems(t, rep, "name:", "version:", "wasm:", "limits.timeout:", "skills[0].examples[0]", "skills[0].examples[1]",
		"skills[0].output_schema")
	if len(rep.Problems) < 7 {
		t.Errorf("%d problems, want at least 7: %q", len(rep.Problems), rep.Problems)
	}
}

func TestValidateRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, "testdata/odd")
	mustEdit(t, filepath.Join(dir, "plugin.yaml"), "limits:\n", "colour: blue\nlimits:\n")
	wantProblems(t, mustValidate(t, dir), "unknown field colour")
}

// TestValidateChecksTheModule: exports, imports and declared memory, all
// reported at once.
func TestValidateChecksTheModule(t *testing.T) {
	t.Parallel()
	rep := mustValidate(t, "testdata/odd")
	wantProblems(t, rep,
		`skills[1].function: "nope" is not exported`,
		`imports evil from module "env", which the host does not provide`,
		"declares at least 2.5 MiB of memory, over its limits.memory 1MiB")
	if len(rep.Problems) != 3 {
		t.Errorf("problems = %q, want exactly these 3", rep.Problems)
	}
}

func TestValidateMissingAndPinnedModule(t *testing.T) {
	t.Parallel()
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		dir := copyPlugin(t, "testdata/odd")
		if err := os.Remove(filepath.Join(dir, "odd.wasm")); err != nil {
			t.Fatal(err)
		}
		wantProblems(t, mustValidate(t, dir), "odd.wasm not found (run: skillhost plugin build")
	})
	t.Run("wrong pin", func(t *testing.T) {
		t.Parallel()
		dir := copyPlugin(t, scaffolded(t))
		mustEdit(t, filepath.Join(dir, "plugin.yaml"), "wasm: greeter.wasm\n", "wasm: greeter.wasm\nsha256: "+strings.Repeat("ab", 32)+"\n")
		wantProblems(t, mustValidate(t, dir), "the manifest pins abab")
	})
	t.Run("symlink out of the folder", func(t *testing.T) {
		t.Parallel()
		dir := copyPlugin(t, "testdata/odd")
		outside := filepath.Join(t.TempDir(), "elsewhere.wasm")
		mustCopy(t, filepath.Join(dir, "odd.wasm"), outside)
		if err := os.Remove(filepath.Join(dir, "odd.wasm")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, "odd.wasm")); err != nil {
			t.Fatal(err)
		}
		wantProblems(t, mustValidate(t, dir), "wasm:", "escapes")
	})
	t.Run("not wasm", func(t *testing.T) {
		t.Parallel()
		dir := copyPlugin(t, "testdata/odd")
		mustWrite(t, filepath.Join(dir, "odd.wasm"), "#!/bin/sh\necho pwned\n")
		wantProblems(t, mustValidate(t, dir), "not a wasm binary module")
	})
}

func TestValidateLimitsAgainstThePolicy(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, scaffolded(t))
	mustEdit(t, filepath.Join(dir, "plugin.yaml"), "timeout: 2s", "timeout: 10m")
	mustEdit(t, filepath.Join(dir, "plugin.yaml"), "memory: 64MiB", "memory: 4GiB")
	wantProblems(t, mustValidate(t, dir), "limits.timeout: 10m0s exceeds the operator's max 30s", "limits.memory: 4GiB exceeds")
}

func TestValidateNotesNetworkNeeds(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, scaffolded(t))
	mustEdit(t, filepath.Join(dir, "plugin.yaml"), "allowed_hosts: []", `allowed_hosts: ["api.example.com"]`)
	rep := mustValidate(t, dir)
	if !rep.OK() {
		t.Fatalf("problems: %q", rep.Problems)
	}
	if len(rep.Notes) == 0 || !strings.Contains(rep.Notes[0], "api.example.com") {
		t.Errorf("notes = %q, want one naming the host the operator must allow", rep.Notes)
	}
}

// TestValidateRefusesHostileShape: a 30-byte module declaring 2^32-1 locals
// (it made wazero allocate 32 GiB) is refused before anything compiles,
// naming the limit.
func TestValidateRefusesHostileShape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustCopy(t, "../internal/sandbox/testdata/shape/locals_4g.wasm", filepath.Join(dir, "hog.wasm"))
	mustWrite(t, filepath.Join(dir, "plugin.yaml"), `name: hog
version: 1.0.0
description: declares 2^32-1 locals
wasm: hog.wasm
skills:
  - id: run
    description: d
    examples: ['{}']
`)
	wantProblems(t, mustValidate(t, dir), "hog.wasm: invalid wasm module", "function 0 declares 4294967295 locals, over the sandbox limit of 50000")
}
