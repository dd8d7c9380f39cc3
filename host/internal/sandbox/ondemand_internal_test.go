package sandbox

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// The gate serves urgent waiters before background ones, in order, and a
// promoted background waiter as urgent.
func TestGateOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGate(1)
	first := newTicket(false)
	if err := g.acquire(ctx, first); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 4)
	wait := func(name string, tk *ticket) {
		go func() {
			if g.acquire(ctx, tk) == nil {
				order <- name
			}
		}()
	}
	b1, b2, u := newTicket(false), newTicket(false), newTicket(true)
	wait("b1", b1)
	testutil.Eventually(t, 5*time.Second, "b1 queued", func() bool { return g.waiting() == 1 })
	wait("b2", b2)
	testutil.Eventually(t, 5*time.Second, "b2 queued", func() bool { return g.waiting() == 2 })
	wait("u", u)
	testutil.Eventually(t, 5*time.Second, "u queued", func() bool { return g.waiting() == 3 })
	g.promote(b2)
	var got []string
	for range 3 {
		g.release()
		got = append(got, <-order)
	}
	g.release()
	if want := []string{"u", "b2", "b1"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("order %v, want %v", got, want)
	}
	if g.free != 1 {
		t.Errorf("free slots %d after every release, want 1", g.free)
	}
}

// A call to a module whose load check waits for a compile slot waits for
// it: with a deadline shorter than the wait it gets plugin_loading, with a
// longer one it is served once the check ran (ahead of other background
// compiles).
func TestCallWaitsForTheLoadCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, err := NewRuntime(ctx, RuntimeConfig{CompileWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	hold := newTicket(true) // every compile slot taken
	if err := rt.gate.acquire(ctx, hold); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile("testdata/hostile.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := rt.Register(ctx, ModuleSpec{Name: "late", Wasm: wasm, Limits: Limits{Timeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if _, checking := m.Checking(); !checking {
		t.Fatal("the module is not being checked")
	}
	_, err = m.Call(ctx, "echo", []byte("early"), Within(20*time.Millisecond))
	fe := testutil.MustFault(t, err, fault.InvalidState, fault.ReasonPluginLoading)
	if !strings.Contains(fe.Msg, `plugin "late" is still compiling`) || fe.Data["plugin"] != "late" {
		t.Errorf("loading fault %q (data %v)", fe.Msg, fe.Data)
	}
	served := make(chan error, 1)
	go func() {
		res, err := m.Call(ctx, "echo", []byte("patient"))
		if err == nil && string(res.Output) != "patient" {
			err = fault.Newf(fault.Internal, fault.ReasonInternal, "output %q", res.Output)
		}
		served <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the call to wait for the check", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.op != nil && m.op.waiters == 1 && m.op.ticket.urgent
	})
	rt.gate.release()
	if err := <-served; err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
	if err := m.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	// It waited for the check: the check's code stays for it, it was
	// served by the check's instance.
	if st := m.Stats(); st.CodeLoads != 1 || st.InstancesCreated != 1 || st.CodeModules != 1 {
		t.Errorf("stats %+v: want one compile, one instance, the code kept", st)
	}
}

// Code released by a module (closed, or idle) is unmapped once the Go
// collector ran: wazero keeps a module's machine code in its compilation
// cache's engine, so the code of a module compiled into a cache shared
// with others stayed mapped for the life of the process. Linux only (it
// reads /proc/self/smaps); not parallel: it measures the process.
func TestReleasedCodeIsUnmapped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	ctx := context.Background()
	wasm, err := os.ReadFile("testdata/hostile.wasm")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := NewRuntime(ctx, RuntimeConfig{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	settled := func() uint64 {
		runtime.GC()
		runtime.GC()
		return executableKiB(t)
	}
	before := settled()
	const n = 40
	mods := make([]*Module, n)
	for i := range mods {
		body := append([]byte{1, 't'}, byte(i))
		wasm := append(append(append([]byte{}, wasm...), 0, byte(len(body))), body...)
		if mods[i], err = rt.Load(ctx, ModuleSpec{Name: "m", Wasm: wasm}); err != nil {
			t.Fatal(err)
		}
	}
	loaded := settled()
	if loaded < before+n*16 {
		t.Fatalf("executable memory %d KiB with %d modules loaded, %d KiB before: the measure sees no code", loaded, n, before)
	}
	for _, m := range mods {
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 10*time.Second, "the closed modules' code unmapped", func() bool {
		return settled() <= before+(loaded-before)/10
	})
}

// executableKiB sums the resident anonymous executable mappings of the
// process (where wazero puts machine code).
func executableKiB(t *testing.T) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total uint64
	exec := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && len(fields[1]) == 4 {
			exec = fields[1][2] == 'x' && len(fields) == 5 // anonymous: no path
			continue
		}
		if exec && len(fields) >= 2 && fields[0] == "Rss:" {
			var kib uint64
			for _, c := range fields[1] {
				kib = kib*10 + uint64(c-'0')
			}
			total += kib
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}
