package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
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

// mustLoad loads a fixture with the given limits.
func mustLoad(t testing.TB, rt *sandbox.Runtime, fixture string, limits sandbox.Limits) *sandbox.Module {
	t.Helper()
	m, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: fixture, Wasm: mustFixture(t, fixture), Limits: limits})
	if err != nil {
		t.Fatalf("Load(%s): %v", fixture, err)
	}
	return m
}

// mustFault asserts err is a *fault.Error of the given kind and reason.
func mustFault(t testing.TB, err error, kind fault.Kind, reason string) *fault.Error {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *fault.Error", err, err)
	}
	if fe.Kind != kind || fe.Reason != reason {
		t.Fatalf("got %v/%q (%v), want %v/%q", fe.Kind, fe.Reason, fe, kind, reason)
	}
	return fe
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

// waitGoroutines polls until the goroutine count is back to baseline.
func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, baseline %d\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
