package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// The Go test plugin (testdata/goguest) is built once per test binary into a
// temporary directory, which also holds the wazero compilation cache shared
// by every Runtime of these tests: compiling a Go guest takes wazero ~1 s,
// ~15 s under -race, so only the first Load pays it.
var (
	goGuestOnce sync.Once
	goGuestDir  string
	goGuestWasm []byte
	goGuestErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if goGuestDir != "" {
		os.RemoveAll(goGuestDir)
	}
	os.Exit(code)
}

// mustGoGuest returns the Go plugin's bytes and the shared compilation cache
// directory, building the plugin and warming the cache on first use.
func mustGoGuest(t *testing.T) (wasm []byte, cacheDir string) {
	t.Helper()
	goGuestOnce.Do(func() {
		if goGuestDir, goGuestErr = os.MkdirTemp("", "sandbox-goguest-"); goGuestErr != nil {
			return
		}
		out := filepath.Join(goGuestDir, "goguest.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = filepath.Join("testdata", "goguest")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=readonly")
		if b, err := cmd.CombinedOutput(); err != nil {
			goGuestErr = fmt.Errorf("building the Go test plugin: %w\n%s", err, b)
			return
		}
		if goGuestWasm, goGuestErr = os.ReadFile(out); goGuestErr != nil {
			return
		}
		// One Load compiles the plugin into the on-disk cache.
		ctx := context.Background()
		rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: filepath.Join(goGuestDir, "cache")})
		if err != nil {
			goGuestErr = err
			return
		}
		defer rt.Close(ctx)
		_, goGuestErr = rt.Load(ctx, sandbox.ModuleSpec{Name: "warm-cache", Wasm: goGuestWasm})
	})
	if goGuestErr != nil {
		t.Fatal(goGuestErr)
	}
	return goGuestWasm, filepath.Join(goGuestDir, "cache")
}

// mustGoRuntime opens a runtime on the Go plugin's shared compilation cache.
func mustGoRuntime(t *testing.T) (*sandbox.Runtime, []byte) {
	t.Helper()
	wasm, cacheDir := mustGoGuest(t)
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: cacheDir})
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(ctx); err != nil {
			t.Errorf("Runtime.Close: %v", err)
		}
	})
	return rt, wasm
}

// mustLoadGo loads the Go plugin under name with limits and checks it echoes.
func mustLoadGo(t *testing.T, rt *sandbox.Runtime, wasm []byte, name string, limits sandbox.Limits) *sandbox.Module {
	t.Helper()
	m, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: name, Wasm: wasm, Limits: limits})
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	mustEcho(t, m, "warm "+name)
	return m
}

// mustEchoAgain checks that m serves echo after a failed call. The fresh
// instance that replaces a discarded one must instantiate and initialize the
// Go runtime within m's deadline, which a starved machine under -race can
// miss: a timeout is retried twice, any other failure is fatal.
func mustEchoAgain(t *testing.T, m *sandbox.Module, in string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		res, err := m.Call(context.Background(), "echo", []byte(in))
		var fe *fault.Error
		if attempt < 3 && errors.As(err, &fe) && fe.Kind == fault.Timeout {
			t.Logf("echo attempt %d: %v", attempt, err)
			continue
		}
		if err != nil {
			t.Fatalf("echo after a failure: %v", err)
		}
		if diff := cmp.Diff(in, string(res.Output)); diff != "" {
			t.Fatalf("echo output (-want +got):\n%s", diff)
		}
		return
	}
}

// echoStream calls echo on m in a loop until the returned stop is called;
// stop reports how many calls completed and the first failure.
func echoStream(ctx context.Context, m *sandbox.Module) (stop func() (int, error)) {
	quit := make(chan struct{})
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-quit:
				done <- result{n: i}
				return
			default:
			}
			in := fmt.Sprintf("echo %d", i)
			res, err := m.Call(ctx, "echo", []byte(in))
			if err == nil && string(res.Output) != in {
				err = fmt.Errorf("echo %d returned %q", i, res.Output)
			}
			if err != nil {
				done <- result{n: i, err: err}
				return
			}
		}
	}()
	return func() (int, error) {
		close(quit)
		r := <-done
		return r.n, r.err
	}
}

// TestGoGuestFailuresClassified runs a real Go plugin's hostile exports, all
// at once, while a stream of echo calls hits a third module of the same
// plugin. A Go guest aborts the same way whether it panicked or memory.grow
// was refused (wazero reports "wasm error: unreachable" for both), so only
// the sandbox's own evidence can tell memory_limit from trap. Each failure must
// get its kind and reason within its deadline plus a margin, the failing
// module must serve echo again right after, every echo of the stream must
// succeed, and no goroutine may be left behind. Not parallel: it counts
// goroutines.
func TestGoGuestFailuresClassified(t *testing.T) {
	ctx := context.Background()
	rt, wasm := mustGoRuntime(t)
	// timeout bounds spin and nap, and also the fresh instance that serves
	// echo after them: under -race, instantiating a Go guest and initializing
	// its runtime takes 120-200 ms, over 300 ms on a loaded 2-core machine.
	const timeout = time.Second
	// capped has a generous deadline so a slow instantiation under -race on a
	// busy machine is never mistaken for the failure under test.
	capped := mustLoadGo(t, rt, wasm, "capped", sandbox.Limits{
		MemoryBytes: 32 << 20, OutputBytes: 1 << 20, Timeout: 30 * time.Second, Concurrency: 8, QueueWait: 10 * time.Second,
	})
	short := mustLoadGo(t, rt, wasm, "short", sandbox.Limits{Timeout: timeout, Concurrency: 4, QueueWait: 10 * time.Second})
	good := mustLoadGo(t, rt, wasm, "good", sandbox.Limits{Concurrency: 2})
	baseline := runtime.NumGoroutine()
	stop := echoStream(ctx, good)

	tests := []struct {
		name   string
		mod    *sandbox.Module
		fn, in string
		kind   fault.Kind // zero with reason "": success
		reason string
		want   string // output on success
	}{
		{"memory hog is memory_limit", capped, "hog", "", fault.ResourceExhausted, fault.ReasonMemoryLimit, ""},
		{"panic is trap", capped, "boom", "", fault.SkillFailed, fault.ReasonTrap, ""},
		{"busy loop times out", short, "spin", "", fault.Timeout, fault.ReasonTimeout, ""},
		{"long sleep times out", short, "nap", "10000", fault.Timeout, fault.ReasonTimeout, ""},
		{"short sleep returns", capped, "nap", "10", 0, "", "ok"},
		{"output over the cap", capped, "big", fmt.Sprint(2 << 20), fault.ResourceExhausted, fault.ReasonOutputLimit, ""},
		{"output under the cap", capped, "big", "1000", 0, "", strings.Repeat("x", 1000)},
	}
	t.Run("hostile", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				res, err := tt.mod.Call(ctx, tt.fn, []byte(tt.in))
				took := time.Since(start)
				if tt.reason == "" {
					if err != nil {
						t.Fatalf("%s(%s): %v", tt.fn, tt.in, err)
					}
					if diff := cmp.Diff(tt.want, string(res.Output)); diff != "" {
						t.Errorf("%s(%s) output (-want +got):\n%s", tt.fn, tt.in, diff)
					}
				} else {
					t.Logf("%s(%s) after %v: %v (cause: %.200v)", tt.fn, tt.in, took, err, errors.Unwrap(err))
					testutil.MustFault(t, err, tt.kind, tt.reason)
					// For nap(10000) this bound (6 s) proves the sleep was cut short.
					if limit := tt.mod.Limits().Timeout; took > limit+margin {
						t.Errorf("%s took %v, deadline %v", tt.fn, took, limit)
					}
				}
				mustEchoAgain(t, tt.mod, "after "+tt.fn)
			})
		}
	})

	n, err := stop()
	if err != nil {
		t.Fatalf("concurrent echo failed: %v", err)
	}
	if n == 0 {
		t.Error("no echo call completed during the hostile calls")
	}
	testutil.WaitGoroutines(t, baseline)
	// hog, boom, spin and the long nap each leave an untrustworthy
	// instance, which must be discarded; an output over the cap does not.
	// (A retried echo timeout adds a failure and a discard.)
	for _, c := range []struct {
		m                     *sandbox.Module
		failures, minDiscards uint64
	}{{capped, 3, 2}, {short, 2, 2}, {good, 0, 0}} {
		if st := c.m.Stats(); st.Failures < c.failures || st.InstancesDiscarded < c.minDiscards {
			t.Errorf("%s stats = %+v, want ≥%d failures and ≥%d discarded instances", c.m.Name(), st, c.failures, c.minDiscards)
		}
	}
}
