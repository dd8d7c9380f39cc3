package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// A second runtime on the same cache folder compiles the module from the
// cache: one miss (the load check), then one hit (the first call: the
// check is on record, so Load does not compile); an in-memory cache counts
// nothing.
func TestCompileCacheCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	wasm := mustFixture(t, "hostile")
	counts := func(cacheDir string) (hits, misses uint64) {
		rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: cacheDir})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(ctx)
		m, err := rt.Load(ctx, sandbox.ModuleSpec{Name: "hostile", Wasm: wasm})
		if err != nil {
			t.Fatal(err)
		}
		mustEcho(t, m, "{}")
		st := rt.Stats()
		return st.CompileHits, st.CompileMisses
	}
	tests := []struct {
		name                 string
		cacheDir             string
		wantHits, wantMisses uint64
	}{
		{"cold cache", dir, 0, 1},
		{"warm cache", dir, 1, 0},
		{"in-memory cache", "", 0, 0},
	}
	for _, tt := range tests { // in order: the second run needs the first's cache
		if hits, misses := counts(tt.cacheDir); hits != tt.wantHits || misses != tt.wantMisses {
			t.Errorf("%s: hits %d, misses %d; want %d, %d", tt.name, hits, misses, tt.wantHits, tt.wantMisses)
		}
	}
}

// Module stats show idle and busy instances, the memory high-water mark
// (a memory hog reaches its cap), discarded instances and resident code.
func TestModuleStatsPool(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	const memory = 4 << 20
	m := mustLoad(t, rt, "hostile", sandbox.Limits{Timeout: 30 * time.Second, MemoryBytes: memory, Concurrency: 2})
	if st := m.Stats(); st.InstancesIdle != 1 || st.InstancesLive != 1 || st.CallsRunning != 0 || st.CodeModules != 1 || st.CodeBytes == 0 {
		t.Fatalf("after Load (its check's instance and code kept): %+v", st)
	}
	mustEcho(t, m, `{"n":1}`)
	small := m.Stats().MemoryPeakBytes
	if small == 0 || small >= memory {
		t.Fatalf("peak after echo = %d", small)
	}
	_, err := m.Call(context.Background(), "grow", nil)
	testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonMemoryLimit)
	st := m.Stats()
	if st.MemoryPeakBytes <= small || st.InstancesDiscarded != 1 || st.InstancesIdle != 0 || st.InstancesLive != 0 {
		t.Errorf("after the memory hog: %+v (peak before %d)", st, small)
	}
	if rst := rt.Stats(); rst.InstancesIdle != st.InstancesIdle || rst.MemoryPeakBytes != st.MemoryPeakBytes {
		t.Errorf("runtime stats %+v do not sum the module's %+v", rst, st)
	}
}
