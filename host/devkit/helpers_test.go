package devkit_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/skillhost/skillhost/host/devkit"
)

// shared holds what TestMain prepares for every test: one temp root and one
// wazero compilation cache, so each module compiles once.
var shared struct {
	root     string
	cacheDir string
}

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "devkit-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared.root, shared.cacheDir = root, filepath.Join(root, "wazero-cache")
	// wazero's on-disk compilation cache outlives the run (it is the one
	// `skillhost plugin test` uses): compiling a Go plugin under -race
	// takes seconds, a cache hit milliseconds.
	if dir, err := os.UserCacheDir(); err == nil {
		shared.cacheDir = filepath.Join(dir, "skillhost", "wazero")
	}
	code := m.Run()
	_ = os.RemoveAll(root)
	os.Exit(code)
}

// repoRoot is the skillhost checkout this package lives in.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// needGo skips when the Go toolchain is not on PATH (builds need it).
func needGo(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go toolchain not on PATH")
	}
}

// builds caches one build per key for the whole test run.
var builds sync.Map // key -> *onceBuild

type onceBuild struct {
	once sync.Once
	dir  string
	err  error
}

// buildSem limits concurrent toolchain runs (2 cores).
var buildSem = make(chan struct{}, 2)

// sharedBuild runs prepare (which builds a plugin folder and returns it)
// once per key per test run; later callers get the same folder.
func sharedBuild(t testing.TB, key string, prepare func() (string, error)) string {
	t.Helper()
	needGo(t)
	v, _ := builds.LoadOrStore(key, &onceBuild{})
	ob := v.(*onceBuild)
	ob.once.Do(func() {
		buildSem <- struct{}{}
		defer func() { <-buildSem }()
		ob.dir, ob.err = prepare()
	})
	if ob.err != nil {
		t.Fatalf("build %s: %v", key, ob.err)
	}
	return ob.dir
}

// scaffolded returns a built scaffold named "greeter", shared by the tests
// that only read it (copy it before changing anything).
func scaffolded(t testing.TB) string {
	t.Helper()
	return sharedBuild(t, "scaffold", func() (string, error) {
		sc, err := devkit.New(devkit.NewOptions{Name: "greeter", Dir: filepath.Join(shared.root, "greeter"),
			SDKPath: filepath.Join(repoRoot(t), "sdk")})
		if err != nil {
			return "", err
		}
		if _, err = devkit.Build(context.Background(), sc.Dir, devkit.BuildOptions{}); err != nil {
			return "", err
		}
		return sc.Dir, warmCache(sc.Dir)
	})
}

// warmCache compiles the plugin in dir into the shared compilation cache
// once, so the tests using it in parallel load it from the cache instead of
// each compiling it at the same time (minutes under -race).
func warmCache(dir string) error {
	rep, err := devkit.Validate(context.Background(), dir, devkit.ValidateOptions{CacheDir: shared.cacheDir})
	if err == nil && !rep.OK() {
		err = fmt.Errorf("validate %s: %q", dir, rep.Problems)
	}
	return err
}

// copyPlugin copies a plugin folder's regular files (not sub-folders) into a
// new temp folder and returns it.
func copyPlugin(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		mustCopy(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
	return dst
}

func mustCopy(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// mustEdit replaces old with new in a file (exactly once).
func mustEdit(t testing.TB, file, old, new string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), old) != 1 {
		t.Fatalf("%s: %q occurs %d times, want once", file, old, strings.Count(string(data), old))
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, file, content string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
