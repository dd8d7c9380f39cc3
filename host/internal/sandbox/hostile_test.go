package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// margin is how late past its deadline a hostile call may end: generous,
// for -race on a busy 2-core machine (typically it is a few milliseconds).
const margin = 5 * time.Second

// TestHostileCallsIsolated runs every hostile export against one module
// while a stream of echo calls hits another: each hostile call gets its own
// kind and reason within the deadline plus a margin, every echo succeeds,
// the hostile module serves echo again, and no goroutine is left behind.
// Not parallel: it counts goroutines.
func TestHostileCallsIsolated(t *testing.T) {
	ctx := context.Background()
	rt := mustRuntime(t)
	// Two modules of the same hostile binary: one with a short deadline for
	// the infinite loop, one with a generous deadline so that a slow trap
	// under -race on a busy machine is not reported as a timeout (a stack
	// overflow takes wazero up to ~1 s, ~5 s under -race: it grows the stack
	// to ~100 MB first).
	const timeout = 200 * time.Millisecond
	looping := mustLoad(t, rt, "hostile", sandbox.Limits{Timeout: timeout})
	hostile := mustLoad(t, rt, "hostile", sandbox.Limits{Timeout: 30 * time.Second, MemoryBytes: 8 << 20, Concurrency: 8})
	good, err := rt.Load(ctx, sandbox.ModuleSpec{Name: "good", Wasm: mustFixture(t, "hostile"), Limits: sandbox.Limits{Concurrency: 2}})
	if err != nil {
		t.Fatal(err)
	}
	mustEcho(t, hostile, "warm")
	mustEcho(t, looping, "warm")
	mustEcho(t, good, "warm")
	baseline := runtime.NumGoroutine()

	stop := make(chan struct{})
	var echoes sync.WaitGroup
	var echoErr error
	var echoN int
	echoes.Add(1)
	go func() {
		defer echoes.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				echoN = i
				return
			default:
			}
			in := fmt.Sprintf("echo %d", i)
			res, err := good.Call(ctx, "echo", []byte(in))
			if err == nil && string(res.Output) != in {
				err = fmt.Errorf("echo %d returned %q", i, res.Output)
			}
			if err != nil {
				echoErr = err
				return
			}
		}
	}()

	tests := []struct {
		fn     string
		kind   fault.Kind
		reason string
	}{
		{"trap", fault.SkillFailed, fault.ReasonTrap},
		{"grow", fault.ResourceExhausted, fault.ReasonMemoryLimit},
		{"recurse", fault.ResourceExhausted, fault.ReasonMemoryLimit},
		{"huge_output", fault.ResourceExhausted, fault.ReasonMemoryLimit}, // 8 MiB output in an 8 MiB memory
		{"fail", fault.SkillFailed, fault.ReasonPluginError},
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		_, err := looping.Call(ctx, "loop", nil)
		if took := time.Since(start); took > timeout+margin {
			t.Errorf("loop took %v, deadline %v", took, timeout)
		}
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Kind != fault.Timeout || fe.Reason != fault.ReasonTimeout {
			t.Errorf("loop: got %v, want Timeout/timeout", err)
		}
	}()
	for _, tt := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := hostile.Call(ctx, tt.fn, nil)
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Kind != tt.kind || fe.Reason != tt.reason {
				t.Errorf("%s: got %v, want %v/%s", tt.fn, err, tt.kind, tt.reason)
			}
		}()
	}
	wg.Wait()
	close(stop)
	echoes.Wait()
	if echoErr != nil {
		t.Fatalf("concurrent echo failed: %v", echoErr)
	}
	if echoN == 0 {
		t.Error("no echo call completed during the hostile calls")
	}
	mustEcho(t, hostile, "alive")
	mustEcho(t, looping, "alive")
	testutil.WaitGoroutines(t, baseline)
	if st := hostile.Stats(); st.InstancesDiscarded < 4 || st.Failures != uint64(len(tests)) {
		t.Errorf("hostile stats = %+v, want ≥4 discarded and %d failures", st, len(tests))
	}
}

func TestTimeoutVersusCancel(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "hostile", sandbox.Limits{Timeout: 150 * time.Millisecond, Concurrency: 2})

	t.Run("deadline", func(t *testing.T) {
		_, err := m.Call(context.Background(), "loop", nil)
		fe := testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("timeout %v does not wrap context.DeadlineExceeded", fe)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := m.Call(ctx, "loop", nil)
		testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		_, err := m.Call(ctx, "loop", nil)
		testutil.MustFault(t, err, fault.Canceled, fault.ReasonCanceled)
		if took := time.Since(start); took > margin {
			t.Errorf("cancel took %v", took)
		}
	})
	mustEcho(t, m, "after")
}

func TestPoolSaturation(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "hostile", sandbox.Limits{Timeout: 1500 * time.Millisecond, Concurrency: 1, QueueWait: 50 * time.Millisecond})
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := m.Call(context.Background(), "loop", nil)
		done <- err
	}()
	<-started
	testutil.Eventually(t, 10*time.Second, "the loop call to hold the only instance", func() bool {
		return m.Stats().CallsRunning == 1
	})
	_, err := m.Call(context.Background(), "echo", []byte("x"))
	testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonPoolSaturated)
	testutil.MustFault(t, <-done, fault.Timeout, fault.ReasonTimeout)
	if st := m.Stats(); st.PoolSaturated == 0 {
		t.Errorf("stats %+v: PoolSaturated = 0", st)
	}
	mustEcho(t, m, "free again")
}

func TestStartFunctionsUnderDeadline(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	const timeout = 150 * time.Millisecond

	t.Run("_initialize on first call", func(t *testing.T) {
		m := mustLoad(t, rt, "start_loop", sandbox.Limits{Timeout: timeout})
		start := time.Now()
		_, err := m.Call(context.Background(), "run", nil)
		testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
		if took := time.Since(start); took > timeout+margin {
			t.Errorf("took %v", took)
		}
	})
	t.Run("start section at load", func(t *testing.T) {
		start := time.Now()
		_, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "spin", Wasm: mustFixture(t, "start_section"), Limits: sandbox.Limits{Timeout: timeout}})
		if err == nil {
			t.Fatal("Load succeeded, want a timeout in the start function")
		}
		testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
		if took := time.Since(start); took > timeout+margin {
			t.Errorf("took %v", took)
		}
	})
}

func TestCloseWaitsForInflight(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "hostile", sandbox.Limits{Timeout: 2 * time.Second, Concurrency: 1})
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "loop", nil)
		done <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the loop call to start", func() bool { return m.Stats().CallsRunning == 1 })
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The call gives its slot back after it stopped running (its result
	// reaches done a moment later).
	if st := m.Stats(); st.CallsRunning != 0 {
		t.Fatal("Close returned before the in-flight call ended")
	}
	testutil.MustFault(t, <-done, fault.Timeout, fault.ReasonTimeout) // it ran to its deadline
	_, err := m.Call(context.Background(), "echo", nil)
	testutil.MustFault(t, err, fault.InvalidState, fault.ReasonModuleClosed)
	if st := m.Stats(); st.InstancesLive != 0 {
		t.Errorf("live instances after Close = %d", st.InstancesLive)
	}
}
