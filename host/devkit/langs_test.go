package devkit_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/devkit"
)

// needTool skips a test when tool is not on PATH, except in CI (CI=true),
// where .ci/run installs it and its absence is a failure.
func needTool(t testing.TB, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not on PATH; .ci/run must install it", tool)
		}
		t.Skipf("%s is not on PATH (CI installs it)", tool)
	}
}

// scaffoldedIn returns a built scaffold of lang named name, shared by the
// tests of a run.
func scaffoldedIn(t testing.TB, lang, name, tool string) string {
	t.Helper()
	needTool(t, tool)
	return sharedBuild(t, "scaffold/"+lang, func() (string, error) {
		sc, err := devkit.New(devkit.NewOptions{Name: name, Lang: lang, Dir: filepath.Join(shared.root, name)})
		if err != nil {
			return "", err
		}
		if _, err = devkit.Build(context.Background(), sc.Dir, devkit.BuildOptions{}); err != nil {
			return "", err
		}
		return sc.Dir, warmCache(sc.Dir)
	})
}

// TestScaffoldsBeyondGo: the AssemblyScript and WAT scaffolds build with
// their toolchains, validate, and pass their examples (an expected output
// and an expected plugin error) in the real sandbox.
func TestScaffoldsBeyondGo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lang, name, tool string
		wantFiles        []string
		passed           int
		imports          []string // among the module's imports
	}{
		{devkit.LangAssemblyScript, "as-greeter", "npm",
			[]string{"package.json", ".gitignore", "plugin.yaml", "assembly/tsconfig.json", "assembly/index.ts", "assembly/skillhost.ts"},
			3, []string{"extism:host/user.log", "extism:host/env.error_set"}},
		{devkit.LangWAT, "wat-greeter", "wat2wasm",
			[]string{".gitignore", "wat-greeter.wat", "plugin.yaml"},
			2, []string{"extism:host/user.log", "extism:host/env.output_set", "extism:host/env.error_set"}},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			t.Parallel()
			dir := scaffoldedIn(t, tt.lang, tt.name, tt.tool)
			for _, f := range tt.wantFiles {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("scaffold lacks %s", f)
				}
			}
			rep := mustValidate(t, dir)
			if !rep.OK() || len(rep.Warnings) != 0 {
				t.Errorf("validate: problems %q, warnings %q", rep.Problems, rep.Warnings)
			}
			var out strings.Builder
			tr, err := devkit.Test(context.Background(), dir, devkit.TestOptions{Out: &out, Verbose: true, CacheDir: shared.cacheDir})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Passed != tt.passed || tr.Failed != 0 || !strings.Contains(out.String(), "     log ") {
				t.Errorf("test: %d passed, %d failed (want %d passed and the plugin's log line):\n%s", tr.Passed, tr.Failed, tt.passed, out.String())
			}
			in := mustInspect(t, dir)
			for _, imp := range tt.imports {
				if !slices.Contains(in.Imports, imp) {
					t.Errorf("imports %v lack %s", in.Imports, imp)
				}
			}
		})
	}
}

// TestBuildSaysWhatItCannotBuild: a folder in a language plugin build does
// not know, or without sources, is refused with the way forward.
func TestBuildSaysWhatItCannotBuild(t *testing.T) {
	t.Parallel()
	manifest := "name: other\nversion: 0.1.0\nwasm: other.wasm\nskills: [{id: s, description: d}]\n"
	tests := []struct {
		name  string
		files map[string]string
		opts  devkit.BuildOptions
		says  string
	}{
		{"rust", map[string]string{"Cargo.toml": "[package]\n"}, devkit.BuildOptions{},
			"cannot build a Rust plugin (Cargo.toml); build it with your toolchain (cargo build --release --target wasm32-unknown-unknown, copying the module to "},
		{"nothing to build", nil, devkit.BuildOptions{}, "it has no Go files, package.json (npm) or .wat file (WAT)"},
		{"npm without a build script", map[string]string{"package.json": `{"name":"other"}`}, devkit.BuildOptions{}, `package.json has no "build" script`},
		{"two .wat files", map[string]string{"a.wat": "(module)", "b.wat": "(module)"}, devkit.BuildOptions{}, "2 .wat files and none named other.wat"},
		{"missing toolchain", map[string]string{"go.mod": "module other\n"}, devkit.BuildOptions{GoBin: "/nonexistent/go"},
			"/nonexistent/go is not on PATH: install Go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mustWrite(t, filepath.Join(dir, "plugin.yaml"), manifest)
			for name, content := range tt.files {
				mustWrite(t, filepath.Join(dir, name), content)
			}
			_, err := devkit.Build(context.Background(), dir, tt.opts)
			if !errors.Is(err, devkit.ErrCannotBuild) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error = %v\nwant ErrCannotBuild saying %q", err, tt.says)
			}
			if tt.name != "two .wat files" && tt.name != "npm without a build script" && !strings.Contains(err.Error(), "then run: skillhost plugin validate "+dir) {
				t.Errorf("error %q does not point at plugin validate", err)
			}
		})
	}
}

// TestBuildRefusesAStaleModule: an npm build script that does not write the
// manifest's module (here: one doing nothing, with an old module in place)
// is an error, not a silent success with the old module.
func TestBuildRefusesAStaleModule(t *testing.T) {
	t.Parallel()
	needTool(t, "npm")
	dir := copyPlugin(t, "testdata/plain")
	mustWrite(t, filepath.Join(dir, "package.json"), `{"name":"plain","private":true,"scripts":{"build":"node -e 0"}}`)
	if err := os.Mkdir(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "the build did not write the manifest's module") {
		t.Fatalf("error = %v, want the stale module refused", err)
	}
}

// TestBuildSaysWhenWat2wasmIsMissing runs without wat2wasm on PATH (so it
// cannot run in parallel: it changes PATH).
func TestBuildSaysWhenWat2wasmIsMissing(t *testing.T) {
	dir := copyPlugin(t, "testdata/plain")
	t.Setenv("PATH", t.TempDir())
	_, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{})
	if !errors.Is(err, devkit.ErrCannotBuild) || !strings.Contains(err.Error(), "wat2wasm is not on PATH: install wabt (Debian/Ubuntu: apt-get install -y wabt") {
		t.Fatalf("error = %v, want a clear word about wat2wasm", err)
	}
}
