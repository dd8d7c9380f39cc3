package devkit_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/devkit"
	"github.com/skillhost/skillhost/sdk"
)

func TestNewRefusesBadNames(t *testing.T) {
	t.Parallel()
	sdk := filepath.Join(repoRoot(t), "sdk")
	for _, name := range []string{"", "Hello", "-x", "a_b", "a b", "../escape", "hé", strings.Repeat("a", 59)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "p")
			_, err := devkit.New(devkit.NewOptions{Name: name, Dir: dir, SDKPath: sdk})
			if !errors.Is(err, devkit.ErrInvalidName) {
				t.Fatalf("New(%q) error = %v, want ErrInvalidName", name, err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused name still created %s", dir)
			}
		})
	}
}

func TestNewRefusesExistingContent(t *testing.T) {
	t.Parallel()
	sdk := filepath.Join(repoRoot(t), "sdk")
	nonEmpty := t.TempDir()
	mustWrite(t, filepath.Join(nonEmpty, "keep.txt"), "mine")
	file := filepath.Join(t.TempDir(), "file")
	mustWrite(t, file, "x")
	tests := []struct{ name, dir, want string }{
		{"non-empty folder", nonEmpty, "is not empty"},
		{"a file", file, "is not a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := devkit.New(devkit.NewOptions{Name: "demo", Dir: tt.dir, SDKPath: sdk})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to say %q", err, tt.want)
			}
		})
	}
	if data, _ := os.ReadFile(filepath.Join(nonEmpty, "keep.txt")); string(data) != "mine" {
		t.Error("New touched a file in a non-empty folder")
	}
}

func TestNewFindsTheSDK(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	t.Run("inside a checkout", func(t *testing.T) {
		t.Parallel()
		// A fake checkout: the SDK's go.mod and go.sum are all New reads.
		checkout := t.TempDir()
		if err := os.MkdirAll(filepath.Join(checkout, "sdk"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustCopy(t, filepath.Join(root, "sdk", "go.mod"), filepath.Join(checkout, "sdk", "go.mod"))
		mustCopy(t, filepath.Join(root, "sdk", "go.sum"), filepath.Join(checkout, "sdk", "go.sum"))
		sc, err := devkit.New(devkit.NewOptions{Name: "walker", Dir: filepath.Join(checkout, "plugins", "walker"), SDK: sdk.Source})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(filepath.Join(checkout, "sdk"), sc.SDK); diff != "" {
			t.Errorf("SDK (-want +got):\n%s", diff)
		}
		gomod, _ := os.ReadFile(filepath.Join(sc.Dir, "go.mod"))
		if !strings.Contains(string(gomod), "=> ../../sdk\n") {
			t.Errorf("go.mod does not replace the sdk with a path relative inside the checkout:\n%s", gomod)
		}
		wantFiles := []string{"go.mod", ".gitignore", "plugin.yaml", "logic.go", "logic_test.go", "main.go", "nowasm.go", "go.sum"}
		if diff := cmp.Diff(wantFiles, sc.Files); diff != "" {
			t.Errorf("files (-want +got):\n%s", diff)
		}
	})
	t.Run("a copy of the SDK the binary carries", func(t *testing.T) {
		t.Parallel()
		sc, err := devkit.New(devkit.NewOptions{Name: "copied", Dir: filepath.Join(t.TempDir(), "copied"), SDK: sdk.Source, Version: "v9.9.9"})
		if err != nil {
			t.Fatal(err)
		}
		gomod, _ := os.ReadFile(filepath.Join(sc.Dir, "go.mod"))
		if !strings.Contains(string(gomod), "replace github.com/skillhost/skillhost/sdk => ./sdk\n") ||
			!strings.Contains(string(gomod), "skillhost v9.9.9") || strings.Contains(string(gomod), root) {
			t.Errorf("go.mod does not replace the SDK with ./sdk (or names this machine's paths):\n%s", gomod)
		}
		if sc.Files[len(sc.Files)-1] != "sdk/" {
			t.Errorf("files %v do not list sdk/", sc.Files)
		}
		// The copy is the SDK of this tree, file for file, tests left out.
		want := sdkFiles(t, filepath.Join(root, "sdk"))
		got := sdkFiles(t, filepath.Join(sc.Dir, "sdk"))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("copied SDK differs from sdk/ (-want +got):\n%s", diff)
		}
	})
	t.Run("no SDK", func(t *testing.T) {
		t.Parallel()
		_, err := devkit.New(devkit.NewOptions{Name: "lost", Dir: filepath.Join(t.TempDir(), "lost")})
		if err == nil || !strings.Contains(err.Error(), "--sdk DIR") {
			t.Fatalf("error = %v, want advice to pass --sdk", err)
		}
	})
	t.Run("--sdk pointing elsewhere", func(t *testing.T) {
		t.Parallel()
		_, err := devkit.New(devkit.NewOptions{Name: "bad", Dir: filepath.Join(t.TempDir(), "bad"), SDKPath: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "has no go.mod of module") {
			t.Fatalf("error = %v, want a clear refusal of the SDK path", err)
		}
	})
}

// sdkFiles maps the SDK's files under dir (tests and testdata left out) to
// their contents.
func sdkFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == "testdata" {
				return fs.SkipDir
			}
			return err
		}
		if strings.HasSuffix(p, "_test.go") || (!strings.HasSuffix(p, ".go") && d.Name() != "go.mod" && d.Name() != "go.sum") {
			return nil
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestScaffoldWorksAsIs is the promise of `plugin new`: build, validate and
// test pass with no edits, and so do its own unit tests.
func TestScaffoldWorksAsIs(t *testing.T) {
	t.Parallel()
	dir := scaffolded(t)
	ctx := context.Background()
	rep, err := devkit.Validate(ctx, dir, devkit.ValidateOptions{CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("validate problems: %q", rep.Problems)
	}
	var out strings.Builder
	tr, err := devkit.Test(ctx, dir, devkit.TestOptions{Out: &out, CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Passed != 3 || tr.Failed != 0 {
		t.Fatalf("test: %d passed, %d failed; output:\n%s", tr.Passed, tr.Failed, out.String())
	}
	if !strings.HasSuffix(out.String(), "3 passed, 0 failed\n") || strings.Count(out.String(), "PASS greeter_hello") != 3 {
		t.Errorf("test output lacks a PASS line per example or the summary:\n%s", out.String())
	}
	if got := string(tr.Results[1].Output); got != `{"greeting":"Hello, Ada!"}` {
		t.Errorf("second example output = %s", got)
	}
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test in the scaffold: %v\n%s", err, b)
	}
}
