package devkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/devkit"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

func mustInspect(t *testing.T, path string) *devkit.Inspection {
	t.Helper()
	in, err := devkit.Inspect(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestInspectPluginFolder(t *testing.T) {
	t.Parallel()
	dir := scaffolded(t)
	in := mustInspect(t, dir)
	if !slices.Contains(in.Exports, "greeter_hello") || !slices.Contains(in.Imports, "extism:host/user.log") {
		t.Errorf("exports %v / imports %v lack the skill or the log host function", in.Exports, in.Imports)
	}
	if in.Size == 0 || len(in.SHA256) != 64 || in.MemoryMinPages == 0 {
		t.Errorf("size %d, sha256 %q, min pages %d: want them filled", in.Size, in.SHA256, in.MemoryMinPages)
	}
	want := &devkit.ManifestSummary{
		Name: "greeter", Version: "0.1.0", Description: `A skillhost plugin scaffolded by "skillhost plugin new"`,
		Skills:       []devkit.SkillSummary{{ID: "greeter_hello", Function: "greeter_hello", Exported: true, Examples: 3}},
		AllowedHosts: []string{}, AllowedPaths: []string{}, ConfigKeys: []string{},
		Requested:      devkit.LimitsView{Timeout: "2s", Memory: "64MiB", Output: "1MiB", Concurrency: 4},
		Effective:      devkit.LimitsView{Timeout: "2s", Memory: "64MiB", Output: "1MiB", Concurrency: 4},
		PolicyProblems: []string{},
	}
	if diff := cmp.Diff(want, in.Manifest); diff != "" {
		t.Errorf("manifest summary (-want +got):\n%s", diff)
	}
	// The .wasm itself finds the manifest that names it.
	if byFile := mustInspect(t, filepath.Join(dir, "greeter.wasm")); byFile.Manifest == nil || byFile.SHA256 != in.SHA256 {
		t.Errorf("inspecting the .wasm: manifest %v, sha %s", byFile.Manifest, byFile.SHA256)
	}
	var text strings.Builder
	if err := in.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"sha256:", "greeter_hello → greeter_hello (exported, 3 examples)", "effective:", "timeout 2s, memory 64MiB", "shape:", "budget:", "counted against sandbox.max_live_bytes"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text output lacks %q:\n%s", s, text.String())
		}
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"exports", "imports", "memory_min_pages", "memory_max_pages", "size", "sha256", "manifest"} {
		if _, ok := back[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
}

func TestInspectBareModule(t *testing.T) {
	t.Parallel()
	bare := filepath.Join(t.TempDir(), "m.wasm")
	mustCopy(t, "testdata/odd/odd.wasm", bare)
	in := mustInspect(t, bare)
	maxPages, maxBytes := uint32(80), uint64(80*64<<10)
	want := &devkit.Inspection{
		Wasm: bare, Size: in.Size, SHA256: in.SHA256,
		Exports: []string{"run"}, Imports: []string{"env.evil"},
		ImportStatus:   []devkit.ImportView{{Import: "env.evil", Status: devkit.ImportUnknown, Note: "no host provides it"}},
		MemoryMinPages: 40, MemoryMaxPages: &maxPages, MemoryMinBytes: 40 * 64 << 10, MemoryMaxBytes: &maxBytes,
		Shape: in.Shape, Budget: in.Budget,
	}
	if in.Budget == nil || in.Budget.Instance < 128<<20 || in.Budget.Call < 200_000_000 {
		t.Errorf("budget %+v: want at least two 64 MiB memories an instance and wazero's stack ceiling a call", in.Budget)
	}
	if in.Shape.Functions != 2 || in.Shape.Exports != 2 {
		t.Errorf("shape %+v: want 2 functions (the import and run) and 2 exports", in.Shape)
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestInspectShowsPolicyNeeds(t *testing.T) {
	t.Parallel()
	in := mustInspect(t, builtFirstParty(t, "fetch"))
	if got := strings.Join(in.Manifest.PolicyProblems, "\n"); !strings.Contains(got, `"example.com" is not allowed by the operator's policy`) {
		t.Errorf("policy problems = %q, want the network permission a default host refuses", in.Manifest.PolicyProblems)
	}
}

func TestInspectRefusesHostileFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.wasm")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(65 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	garbage := filepath.Join(dir, "garbage.wasm")
	mustWrite(t, garbage, "\x00asm\x01\x00\x00\x00\x07\xff\xff\xff\xff\x0f")
	t.Run("over the size cap", func(t *testing.T) {
		_, err := devkit.Inspect(context.Background(), huge)
		if err == nil || !strings.Contains(err.Error(), "over the 64MiB cap") {
			t.Fatalf("error = %v, want the size cap", err)
		}
	})
	t.Run("truncated section", func(t *testing.T) {
		_, err := devkit.Inspect(context.Background(), garbage)
		if !errors.Is(err, sandbox.ErrInvalidModule) {
			t.Fatalf("error = %v, want ErrInvalidModule", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := devkit.Inspect(context.Background(), filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("error = %v, want not-exist", err)
		}
	})
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[uint64]string{0: "0 B", 812: "812 B", 1024: "1 KiB", 64 << 20: "64 MiB", 3426887: "3.3 MiB", 2621440: "2.5 MiB"} {
		if got := devkit.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestInspectImportStatus: each import once, provided, refused (with why)
// or unknown.
func TestInspectImportStatus(t *testing.T) {
	t.Parallel()
	in := mustInspect(t, "testdata/imports/imports.wasm")
	want := []devkit.ImportView{
		{Import: "env.abort", Status: devkit.ImportUnknown, Note: "no host provides it"},
		{Import: "extism:host/env.http_request", Status: devkit.ImportRefused,
			Note: "Extism's own HTTP is off (no allowed hosts); use extism:host/user http_fetch"},
		{Import: "extism:host/user.launch_missiles", Status: devkit.ImportUnknown,
			Note: "skillhost offers agent_call, context_get, context_set, http_fetch, log, progress, task_history, task_interrupt"},
		{Import: "extism:host/user.log", Status: devkit.ImportProvided},
		{Import: "wasi_snapshot_preview1.fd_write", Status: devkit.ImportProvided},
	}
	if diff := cmp.Diff(want, in.ImportStatus); diff != "" {
		t.Errorf("import status (-want +got):\n%s", diff)
	}
	var text strings.Builder
	if err := in.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`imports: +5: 2 provided, 1 refused, 2 unknown\n`,
		`  provided: +extism:host/user: log; wasi_snapshot_preview1: fd_write\n`,
		`  refused: +extism:host/env\.http_request \(Extism's own HTTP is off`,
		`  unknown: +env\.abort \(no host provides it\); extism:host/user\.launch_missiles \(skillhost offers`,
	} {
		if !regexp.MustCompile(line).MatchString(text.String()) {
			t.Errorf("text lacks %q:\n%s", line, text.String())
		}
	}
}
