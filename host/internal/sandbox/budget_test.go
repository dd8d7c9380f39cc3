package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// mustBudgetRuntime opens a runtime with a memory budget of total bytes.
func mustBudgetRuntime(t *testing.T, total uint64) *sandbox.Runtime {
	t.Helper()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: t.TempDir(), MaxLiveBytes: total})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	return rt
}

// TestModuleCost: an instance counts two linear memories at the cap, its
// tables at their maximums and its globals; a call counts wazero's stack
// ceiling.
func TestModuleCost(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	tiny := mustLoad(t, rt, "hostile", sandbox.Limits{MemoryBytes: 1 << 20}).Cost()
	if tiny.Instance < 2<<20 || tiny.Instance > 8<<20 {
		t.Errorf("hostile with a 1 MiB cap costs %d bytes an instance, want 2 MiB of memories plus a few MiB", tiny.Instance)
	}
	if tiny.Call < 200_000_000 || tiny.Call > 210_000_000 {
		t.Errorf("a call costs %d bytes, want wazero's stack ceiling (~200 MB with the garbage it leaves)", tiny.Call)
	}
	g := bytes.Repeat([]byte{0x7e, 0x01, 0x42, 0x00, 0x0b}, 10_000) // 10,000 (global (mut i64) (i64.const 0))
	globals, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "globals", Limits: sandbox.Limits{MemoryBytes: 1 << 20},
		Wasm: module(section(6, leb(10_000), g))})
	if err != nil {
		t.Fatal(err)
	}
	if d := globals.Cost().Instance - tiny.Instance; d < 10_000*100 {
		t.Errorf("10,000 globals add %d bytes to an instance's cost, want at least 100 B each (measured)", d)
	}
}

// TestLoadRefusesModuleOverTheBudget: one instance plus one call of it
// could never fit.
func TestLoadRefusesModuleOverTheBudget(t *testing.T) {
	t.Parallel()
	rt := mustBudgetRuntime(t, 150<<20)
	_, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "big", Wasm: mustFixture(t, "hostile")})
	if !errors.Is(err, sandbox.ErrOverBudget) || !strings.Contains(err.Error(), "sandbox.max_live_bytes") {
		t.Fatalf("Load = %v, want ErrOverBudget naming sandbox.max_live_bytes", err)
	}
}

// TestBudgetBoundsLiveInstancesAndCalls: with room for one running call,
// a second call waits QueueWait and is refused with pool_saturated, min
// instances beyond the room are not created, and the budget comes back
// when the call ends.
func TestBudgetBoundsLiveInstancesAndCalls(t *testing.T) {
	t.Parallel()
	probe := mustLoad(t, mustRuntime(t), "hostile", sandbox.Limits{MemoryBytes: 1 << 20}).Cost()
	rt := mustBudgetRuntime(t, 2*probe.Instance+probe.Call+probe.Instance/2)
	m, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "h", Wasm: mustFixture(t, "hostile"),
		Limits: sandbox.Limits{MemoryBytes: 1 << 20, Timeout: 30 * time.Second, Concurrency: 4, MinInstances: 4, QueueWait: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the 2 min instances the budget has room for", func() bool {
		st := rt.Stats()
		return st.InstancesLive == 2 && st.ReservedBytes == 2*probe.Instance
	})
	ctx, cancel := context.WithCancel(context.Background())
	looped := make(chan error, 1)
	go func() { _, err := m.Call(ctx, "loop", nil); looped <- err }()
	testutil.Eventually(t, 10*time.Second, "the looping call to reserve its stack", func() bool {
		return rt.Stats().ReservedBytes >= 2*probe.Instance+probe.Call
	})
	_, err = m.Call(context.Background(), "echo", nil)
	fe := testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonPoolSaturated)
	if !strings.Contains(fe.Msg, "sandbox.max_live_bytes") || fe.Data["budget_bytes"] == nil {
		t.Errorf("refusal %q (data %v) does not name the budget", fe.Msg, fe.Data)
	}
	cancel()
	testutil.MustFault(t, <-looped, fault.Canceled, fault.ReasonCanceled)
	mustEcho(t, m, "after")
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := rt.Stats(); st.ReservedBytes != 0 || st.InstancesLive != 0 {
		t.Errorf("after Close: %d bytes reserved, %d instances live; want none", st.ReservedBytes, st.InstancesLive)
	}
}

// TestStackOverflowIsMemoryLimit: deep recursion with fat frames
// (testdata/stack_hog.wat) exhausts wazero's call stack, which is host
// memory counted in the budget: -32106 memory_limit, never a trap.
func TestStackOverflowIsMemoryLimit(t *testing.T) {
	t.Parallel()
	m := mustLoad(t, mustRuntime(t), "stack_hog", sandbox.Limits{Timeout: time.Minute})
	_, err := m.Call(context.Background(), "recurse", nil)
	fe := testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonMemoryLimit)
	if fe.Data["limit"] != "call_stack" || !strings.Contains(fe.Msg, "call stack") {
		t.Errorf("stack hog fault %q (data %v): want it to say the call stack ran out", fe.Msg, fe.Data)
	}
	if res, err := m.Call(context.Background(), "echo", nil); err != nil || !res.Fresh {
		t.Errorf("echo after the overflow = %+v, %v; want it served by a fresh instance", res, err)
	}
}

// TestBudgetBoundsStackMemory: eight calls that each grow wazero's stack to
// tens of MB and hold it until their deadline, under a budget with room for
// two running calls: two run, six are refused (pool_saturated) after
// QueueWait, and the process's memory stays within the budget. Without it
// all eight ran at once and held ~8 times as much (measured: see the
// README). The Go collector lets garbage grow as large as the live heap
// before it runs; a soft memory limit at the budget (GOMEMLIMIT, here
// debug.SetMemoryLimit) makes it reclaim the stacks a call outgrew in time.
// Not parallel: it measures the process's memory.
func TestBudgetBoundsStackMemory(t *testing.T) {
	probe := mustLoad(t, mustRuntime(t), "stack_hog", sandbox.Limits{MemoryBytes: 1 << 20}).Cost()
	const hogs = 8
	total := hogs*probe.Instance + 2*probe.Call
	rt := mustBudgetRuntime(t, total)
	m, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "hog", Wasm: mustFixture(t, "stack_hog"),
		Limits: sandbox.Limits{MemoryBytes: 1 << 20, Timeout: 3 * time.Second, Concurrency: hogs, QueueWait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	mustEcho(t, m, "")
	runtime.GC()
	base := goMemory()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(base + total)))
	peak := base
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, goMemory())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	reasons := make([]string, hogs)
	for i := range hogs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.Call(context.Background(), "hold", nil)
			var fe *fault.Error
			if errors.As(err, &fe) {
				reasons[i] = fe.Reason
			} else {
				reasons[i] = fmt.Sprint(err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	slices.Sort(reasons)
	want := []string{"pool_saturated", "pool_saturated", "pool_saturated", "pool_saturated", "pool_saturated", "pool_saturated", "timeout", "timeout"}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if grew := peak - base; grew > total {
		t.Errorf("the process's memory grew by %d MiB, over the budget of %d MiB", grew>>20, total>>20)
	}
	t.Logf("peak growth %d MiB for %d stack-holding calls under a %d MiB budget", (peak-base)>>20, hogs, total>>20)
}

// goMemory is the memory the Go runtime has mapped and not released.
func goMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
