package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// mustFixture reads testdata/<name>.wasm.
func mustFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// mustRuntime opens a runtime with a cache in a temporary directory.
func mustRuntime(t testing.TB) *sandbox.Runtime {
	t.Helper()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(ctx); err != nil {
			t.Errorf("Runtime.Close: %v", err)
		}
	})
	return rt
}

// testTimeout is the call deadline of a test that does not set one: the 2s
// default is too short for a loaded machine under -race, and a test about
// timeouts sets its own.
const testTimeout = 30 * time.Second

// mustLoad loads a fixture with the given limits (Timeout: testTimeout unless
// set).
func mustLoad(t testing.TB, rt *sandbox.Runtime, fixture string, limits sandbox.Limits) *sandbox.Module {
	t.Helper()
	if limits.Timeout == 0 {
		limits.Timeout = testTimeout
	}
	m, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: fixture, Wasm: mustFixture(t, fixture), Limits: limits})
	if err != nil {
		t.Fatalf("Load(%s): %v", fixture, err)
	}
	return m
}

// mustEcho calls echo and checks the output.
func mustEcho(t testing.TB, m *sandbox.Module, in string) *sandbox.Result {
	t.Helper()
	res, err := m.Call(context.Background(), "echo", []byte(in))
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if string(res.Output) != in {
		t.Fatalf("echo output = %q, want %q", res.Output, in)
	}
	return res
}
