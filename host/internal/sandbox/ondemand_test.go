package sandbox_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// mustRuntimeWith opens a runtime with cfg (a cache folder of its own unless
// cfg names one) and closes it when the test ends.
func mustRuntimeWith(t *testing.T, cfg sandbox.RuntimeConfig) *sandbox.Runtime {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = t.TempDir()
	}
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, cfg)
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

// An idle module gives back its instance after IdleTimeout, then its code;
// the next call loads the code again (from the compilation cache) on a
// fresh instance and succeeds.
func TestIdleModuleHoldsNothing(t *testing.T) {
	t.Parallel()
	rt := mustRuntimeWith(t, sandbox.RuntimeConfig{})
	m := mustLoad(t, rt, "hostile", sandbox.Limits{IdleTimeout: 20 * time.Millisecond})
	mustEcho(t, m, "busy")
	testutil.Eventually(t, 10*time.Second, "the idle module to hold no instance and no code", func() bool {
		st := m.Stats()
		return st.InstancesLive == 0 && st.CodeModules == 0
	})
	st, rst := m.Stats(), rt.Stats()
	if st.InstancesReleased != 1 || st.InstancesDiscarded != 0 || st.CodeReleases != 1 {
		t.Errorf("module stats %+v: want 1 instance and 1 code released, none discarded", st)
	}
	if rst.CodeBytes != 0 || rst.CodeModules != 0 || rst.InstancesLive != 0 || rst.ReservedBytes != 0 {
		t.Errorf("runtime stats %+v: want nothing resident, nothing reserved", rst)
	}
	res := mustEcho(t, m, "again")
	if !res.Fresh {
		t.Error("the call after the release did not create its instance")
	}
	if st := m.Stats(); st.CodeLoads != 2 || st.CodeModules != 1 || st.InstancesLive != 1 || rt.Stats().CompileHits != 1 {
		t.Errorf("after the second call: %+v (hits %d); want the code loaded again from the cache and kept", st, rt.Stats().CompileHits)
	}
}

// MinInstances stay alive past IdleTimeout, with their code, and one
// discarded after a trap is replaced; a module beside it without
// MinInstances is released meanwhile.
func TestMinInstancesStayWarm(t *testing.T) {
	t.Parallel()
	rt := mustRuntimeWith(t, sandbox.RuntimeConfig{})
	idle := sandbox.Limits{IdleTimeout: 5 * time.Millisecond, Timeout: testTimeout}
	warm := idle
	warm.MinInstances, warm.Concurrency = 2, 3
	w := mustLoad(t, rt, "hostile", warm)
	testutil.Eventually(t, 10*time.Second, "2 min instances", func() bool { return w.Stats().InstancesIdle == 2 })
	_, err := w.Call(context.Background(), "trap", nil)
	testutil.MustFault(t, err, fault.SkillFailed, fault.ReasonTrap)
	testutil.Eventually(t, 10*time.Second, "the trapped instance replaced", func() bool {
		st := w.Stats()
		return st.InstancesLive == 2 && st.InstancesDiscarded == 1
	})
	// A module released after w's instances expired: the sweeps saw both.
	other := mustLoad(t, rt, "hostile", idle)
	mustEcho(t, other, "x")
	testutil.Eventually(t, 10*time.Second, "the other module released", func() bool { return other.Stats().CodeModules == 0 })
	if st := w.Stats(); st.InstancesLive != 2 || st.InstancesIdle != 2 || st.CodeModules != 1 || st.InstancesReleased != 0 {
		t.Errorf("min instances module after the sweeps: %+v; want 2 instances and its code kept", st)
	}
	if res := mustEcho(t, w, "warm"); res.Fresh {
		t.Error("a call to the warm module created an instance")
	}
}

// With a code budget for two modules, compiling a third releases the code
// of the least recently used one (with its idle instance); a later call to
// it loads the code again, releasing the next least recently used.
func TestCodeBudgetReleasesLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	probe := mustLoad(t, mustRuntimeWith(t, sandbox.RuntimeConfig{}), "hostile", sandbox.Limits{}).Stats().CodeBytes
	rt := mustRuntimeWith(t, sandbox.RuntimeConfig{MaxCodeBytes: 2*probe + probe/2})
	load := func(name string) *sandbox.Module { // distinct modules: each is checked
		t.Helper()
		m, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: name, Wasm: withSection(mustFixture(t, "hostile"), name),
			Limits: sandbox.Limits{IdleTimeout: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := load("a"), load("b")
	mustEcho(t, a, "a") // b is now the least recently used
	c := load("c")
	resident := func() [3]uint64 {
		return [3]uint64{a.Stats().CodeModules, b.Stats().CodeModules, c.Stats().CodeModules}
	}
	if got := resident(); got != [3]uint64{1, 0, 1} || rt.Stats().CodeEvictions != 1 || b.Stats().InstancesLive != 0 {
		t.Fatalf("code resident (a, b, c) = %v, evictions %d, b's instances %d; want b's code and instance released",
			got, rt.Stats().CodeEvictions, b.Stats().InstancesLive)
	}
	if res := mustEcho(t, b, "b"); !res.Fresh {
		t.Error("b served without loading its code again")
	}
	if got := resident(); got != [3]uint64{0, 1, 1} || rt.Stats().CodeBytes > rt.Stats().CodeBudgetBytes {
		t.Errorf("after b's call: code resident (a, b, c) = %v, %d bytes; want a's released", got, rt.Stats().CodeBytes)
	}
}

// withSection returns wasm with a custom section holding name appended: a
// distinct module to the compilation cache and the check record.
func withSection(wasm []byte, name string) []byte {
	body := append([]byte{byte(len("t"))}, 't')
	body = append(body, name...)
	out := append(append([]byte{}, wasm...), 0, byte(len(body)))
	return append(out, body...)
}

// A module whose load check passed before (on the same compilation cache)
// is not compiled at Register: its first call loads the code from the
// cache.
func TestRegisterSkipsACheckedModule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	first := mustRuntimeWith(t, sandbox.RuntimeConfig{CacheDir: dir})
	if _, err := first.Load(ctx, sandbox.ModuleSpec{Name: "h", Wasm: mustFixture(t, "hostile")}); err != nil {
		t.Fatal(err)
	}
	rt := mustRuntimeWith(t, sandbox.RuntimeConfig{CacheDir: dir})
	m, err := rt.Register(ctx, sandbox.ModuleSpec{Name: "h", Wasm: mustFixture(t, "hostile")})
	if err != nil {
		t.Fatal(err)
	}
	if _, checking := m.Checking(); checking || m.Ready(ctx) != nil {
		t.Fatal("a module checked before is checked again")
	}
	if st := rt.Stats(); st.CodeLoads != 0 || st.CodeModules != 0 || st.InstancesLive != 0 {
		t.Fatalf("after Register: %+v; want nothing compiled or instantiated", st)
	}
	mustEcho(t, m, "first")
	if st := rt.Stats(); st.CodeLoads != 1 || st.CompileHits != 1 {
		t.Errorf("after the first call: %+v; want one compile, served by the cache", st)
	}
}

// Register returns before compiling; the background check ends with the
// code released (nobody called), and a failing check fails the module:
// Ready returns the error and calls are refused naming it.
func TestRegisterChecksInTheBackground(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := mustRuntimeWith(t, sandbox.RuntimeConfig{})
	good, err := rt.Register(ctx, sandbox.ModuleSpec{Name: "good", Wasm: mustFixture(t, "hostile")})
	if err != nil {
		t.Fatal(err)
	}
	if err := good.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if st := good.Stats(); st.CodeLoads != 1 || st.CodeModules != 0 || st.InstancesLive != 0 || st.InstancesCreated != 0 || st.InstancesReleased != 0 {
		t.Errorf("after the background check: %+v; want its code released and its instance, never pooled, not counted", st)
	}
	bad, err := rt.Register(ctx, sandbox.ModuleSpec{Name: "spin", Wasm: mustFixture(t, "start_section"),
		Limits: sandbox.Limits{Timeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatalf("Register validates without running the start function: %v", err)
	}
	if err := bad.Ready(ctx); err == nil || !strings.Contains(err.Error(), `"spin"`) {
		t.Fatalf("Ready = %v, want the check's failure naming the plugin", err)
	}
	_, err = bad.Call(ctx, "run", nil)
	if fe := testutil.MustFault(t, err, fault.InvalidState, fault.ReasonModuleClosed); !strings.Contains(fe.Msg, "failed to load") {
		t.Errorf("call to the failed module: %q", fe.Msg)
	}
}

// With a Source, the module does not keep its bytes: they are read again
// when released code is loaded, and bytes that changed are refused.
func TestSourceIsReadAgainAndChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := mustRuntimeWith(t, sandbox.RuntimeConfig{})
	wasm := mustFixture(t, "hostile")
	var reads atomic.Int32
	var changed atomic.Bool
	source := func() ([]byte, error) {
		reads.Add(1)
		if changed.Load() {
			return append(append([]byte{}, wasm...), 0, 2, 1, 'x'), nil // a custom section more
		}
		return wasm, nil
	}
	m, err := rt.Load(ctx, sandbox.ModuleSpec{Name: "src", Wasm: wasm, Source: source, Limits: sandbox.Limits{IdleTimeout: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	mustEcho(t, m, "one")
	released := func() bool { return m.Stats().CodeModules == 0 }
	testutil.Eventually(t, 10*time.Second, "code released", released)
	before := reads.Load()
	mustEcho(t, m, "two")
	if n := reads.Load(); before == 0 || n != before+1 {
		t.Errorf("Source read %d times, then %d; want once more for the code loaded again", before, n)
	}
	testutil.Eventually(t, 10*time.Second, "code released again", released)
	changed.Store(true)
	_, err = m.Call(ctx, "echo", []byte("three"))
	if fe := testutil.MustFault(t, err, fault.Internal, fault.ReasonInternal); !strings.Contains(fe.Msg, "changed since") {
		t.Errorf("call on changed bytes: %q", fe.Msg)
	}
	if err := m.Ready(ctx); err != nil {
		t.Errorf("a failed reload failed the module's load check: %v", err)
	}
}

// While background compiles are held (a registry validating many folders),
// a registered module's check waits with compile slots free, and one that
// somebody waits for (Ready, or a call) compiles anyway; resuming lets the
// held ones run.
func TestHoldBackground(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := mustRuntimeWith(t, sandbox.RuntimeConfig{CompileWorkers: 2})
	resume := rt.HoldBackground()
	held, err := rt.Register(ctx, sandbox.ModuleSpec{Name: "held", Wasm: withSection(mustFixture(t, "hostile"), "held")})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the check queued with both slots free", func() bool {
		st := rt.Stats()
		return st.CompilesQueued == 1 && st.CompilesRunning == 0
	})
	awaited, err := rt.Register(ctx, sandbox.ModuleSpec{Name: "awaited", Wasm: withSection(mustFixture(t, "hostile"), "awaited")})
	if err != nil {
		t.Fatal(err)
	}
	if err := awaited.Ready(ctx); err != nil {
		t.Fatalf("a check somebody waits for did not run while held: %v", err)
	}
	if _, checking := held.Checking(); !checking {
		t.Fatal("the held check ran")
	}
	resume()
	if err := held.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}
