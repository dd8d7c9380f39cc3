package sandbox_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// TestTableLoadRefuses: tables live in host memory the memory meter cannot
// see, so Load refuses declared minimums over the table budget (cap / 8
// bytes an entry, shared by the module's tables) and imported tables.
func TestTableLoadRefuses(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	tests := []struct {
		name    string
		fixture string
		limits  sandbox.Limits
		wantIn  []string
	}{
		{"minimums one entry over the budget", "table_min", sandbox.Limits{MemoryBytes: 1 << 20},
			[]string{"table 1 declares a minimum of 65537 entries", "at most 131072 entries", "8 bytes an entry", "1 MiB"}},
		{"imported table", "table_import", sandbox.Limits{}, []string{"imports not provided by the host: env.table"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "victim", Wasm: mustFixture(t, tt.fixture), Limits: tt.limits})
			if !errors.Is(err, sandbox.ErrInvalidModule) {
				t.Fatalf("Load error = %v, want %v", err, sandbox.ErrInvalidModule)
			}
			for _, s := range append(tt.wantIn, `"victim"`) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

// TestTableMinimumsWithinBudgetLoad: the same module loads under a cap that
// covers its tables, and Inspect reports them as declared.
func TestTableMinimumsWithinBudgetLoad(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "table_min", sandbox.Limits{MemoryBytes: 2 << 20})
	declared := uint32(65536)
	want := []sandbox.TableInfo{{Min: 65536, Max: &declared}, {Min: 65537}}
	if diff := cmp.Diff(want, m.Info().Tables); diff != "" {
		t.Errorf("tables (-want +got):\n%s", diff)
	}
	if _, err := m.Call(context.Background(), "ok", nil); err != nil {
		t.Errorf("ok: %v", err)
	}
}

// TestTableGrowCapped: a guest capped at 1 MiB asking table.grow for 1 GiB
// of entries is refused (its table gets a maximum of 131072 entries, 1 MiB)
// and the host's heap does not grow. Not parallel: it measures the heap.
func TestTableGrowCapped(t *testing.T) {
	ctx := context.Background()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "tables", sandbox.Limits{MemoryBytes: 1 << 20, Concurrency: 1, Timeout: 30 * time.Second})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := m.Call(ctx, "tgrow", nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	testutil.MustFault(t, err, fault.SkillFailed, fault.ReasonTrap)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Errorf("a plugin capped at 1 MiB made the host retain %d MiB through table.grow", grown>>20)
	}

	// Growth within the budget works, up to the budget: 131 growths of 1000
	// entries fit in 131072, the 132nd is refused.
	for i := range 131 {
		if _, err := m.Call(ctx, "tgrow_fit", nil); err != nil {
			t.Fatalf("growth %d of 1000 entries: %v", i+1, err)
		}
	}
	_, err = m.Call(ctx, "tgrow_fit", nil)
	testutil.MustFault(t, err, fault.SkillFailed, fault.ReasonTrap)
}

// TestProcExitDiscardsInstance: WASI proc_exit closes the guest's module.
// exit(0) is a success with the output set before it (as Extism reports
// it), exit(n) a trap carrying the code; either way the instance is
// discarded and the next call runs on a fresh one.
func TestProcExitDiscardsInstance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fn       string
		wantErr  bool
		wantCode uint32
	}{
		{"exit0", false, 0},
		{"exit3", true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rt := mustRuntime(t)
			m := mustLoad(t, rt, "tables", sandbox.Limits{Concurrency: 1})
			res, err := m.Call(ctx, tt.fn, nil)
			if tt.wantErr {
				fe := testutil.MustFault(t, err, fault.SkillFailed, fault.ReasonTrap)
				if diff := cmp.Diff(tt.wantCode, fe.Data["exit_code"]); diff != "" {
					t.Errorf("exit_code (-want +got):\n%s", diff)
				}
			} else {
				if err != nil {
					t.Fatalf("%s: %v", tt.fn, err)
				}
				if string(res.Output) != "bye" {
					t.Errorf("%s output = %q, want %q", tt.fn, res.Output, "bye")
				}
			}
			if st := m.Stats(); st.InstancesDiscarded != 1 || st.InstancesLive != 0 {
				t.Errorf("after %s: stats %+v, want the exited instance discarded", tt.fn, st)
			}
			for i := range 2 {
				res, err := m.Call(ctx, "ok", nil)
				if err != nil {
					t.Fatalf("call %d after %s: %v", i+1, tt.fn, err)
				}
				if string(res.Output) != "ok" || res.Fresh != (i == 0) {
					t.Errorf("call %d after %s: output %q, fresh %v; want \"ok\", fresh %v", i+1, tt.fn, res.Output, res.Fresh, i == 0)
				}
			}
		})
	}
}
