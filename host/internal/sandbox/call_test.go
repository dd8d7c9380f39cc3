package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func TestEchoAndWarmReuse(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "hostile", sandbox.Limits{Concurrency: 1})
	for i, in := range []string{"hello, sandbox", "", strings.Repeat("x", 1000) + "tail"} {
		res := mustEcho(t, m, in)
		if res.Fresh {
			t.Errorf("call %d: Fresh = true, want the warm instance reused", i)
		}
		if res.MemoryPeakBytes == 0 {
			t.Errorf("call %d: MemoryPeakBytes = 0", i)
		}
	}
	st := m.Stats()
	if st.MemoryPeakBytes == 0 {
		t.Error("stats: MemoryPeakBytes = 0")
	}
	if st.LastUsed.IsZero() || st.CodeBytes == 0 {
		t.Errorf("stats: LastUsed %v, CodeBytes %d; want both set", st.LastUsed, st.CodeBytes)
	}
	st.MemoryPeakBytes, st.LastUsed, st.CodeBytes = 0, time.Time{}, 0
	want := sandbox.Stats{Calls: 3, InstancesCreated: 1, InstancesLive: 1, InstancesIdle: 1, CodeModules: 1, CodeLoads: 1}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestUnknownExport(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "hostile", sandbox.Limits{})
	_, err := m.Call(context.Background(), "nope", nil)
	fe := testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonUnknownSkill)
	if !strings.Contains(fe.Message(), `"nope"`) {
		t.Errorf("message %q does not name the function", fe.Message())
	}
}

func TestPluginError(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "hostile", sandbox.Limits{Concurrency: 1})
	tests := []struct {
		fn       string
		wantMsg  string
		wantData map[string]any
	}{
		{"fail", "bad input", map[string]any{"plugin_code": "E_BAD", "plugin_data": json.RawMessage(`{"field":"text"}`)}},
		{"fail_text", "nope", map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			_, err := m.Call(context.Background(), tt.fn, nil)
			fe := testutil.MustFault(t, err, fault.SkillFailed, fault.ReasonPluginError)
			if fe.Message() != tt.wantMsg {
				t.Errorf("message = %q, want %q", fe.Message(), tt.wantMsg)
			}
			got := map[string]any{}
			for k, v := range fe.Data {
				if k == "plugin_code" || k == "plugin_data" {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.wantData, got); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			// A plugin error leaves the instance healthy: it is reused.
			if res := mustEcho(t, m, "after"); res.Fresh {
				t.Error("instance discarded after a plugin error")
			}
		})
	}
}

func TestOutputLimitKeepsInstance(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "hostile", sandbox.Limits{OutputBytes: 1 << 10, Concurrency: 1})
	_, err := m.Call(context.Background(), "huge_output", nil)
	fe := testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonOutputLimit)
	if got := fe.Data["output_bytes"]; got != 8<<20 {
		t.Errorf("output_bytes = %v, want %d", got, 8<<20)
	}
	if res := mustEcho(t, m, "still fine"); res.Fresh {
		t.Error("instance discarded after an output limit, want it kept")
	}
	mustEcho(t, m, strings.Repeat("y", 1<<10)) // exactly the cap is fine
	_, err = m.Call(context.Background(), "echo", []byte(strings.Repeat("y", 1<<10+1)))
	testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonOutputLimit)
}

func TestMemoryHogVersusTrap(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	const capBytes = 4 << 20
	m := mustLoad(t, rt, "hostile", sandbox.Limits{MemoryBytes: capBytes, Concurrency: 1})
	tests := []struct {
		fn        string
		kind      fault.Kind
		reason    string
		wantFresh bool // the next call needs a new instance
	}{
		{"grow", fault.ResourceExhausted, fault.ReasonMemoryLimit, true},
		{"grow_huge", fault.ResourceExhausted, fault.ReasonMemoryLimit, true},
		{"trap", fault.SkillFailed, fault.ReasonTrap, true},
		{"huge_output", fault.ResourceExhausted, fault.ReasonMemoryLimit, true}, // 8 MiB output, 4 MiB cap
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			_, err := m.Call(context.Background(), tt.fn, nil)
			testutil.MustFault(t, err, tt.kind, tt.reason)
			res := mustEcho(t, m, "next")
			if res.Fresh != tt.wantFresh {
				t.Errorf("next call Fresh = %v, want %v", res.Fresh, tt.wantFresh)
			}
			if res.MemoryPeakBytes > 2*capBytes {
				t.Errorf("MemoryPeakBytes = %d, over two capped memories", res.MemoryPeakBytes)
			}
		})
	}
}

// TestInputOverMemoryCap: an input the kernel's memory may not grow to
// hold is memory_limit, also one that would fit the memory's bytes but not
// its allocator (the kernel's memory has 1 MiB, its allocator starts with
// 64 KiB and must grow: the cap refuses, alloc gives 0). The plugin then
// still echoes.
func TestInputOverMemoryCap(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	m := mustLoad(t, rt, "hostile", sandbox.Limits{MemoryBytes: 1 << 20, Concurrency: 1})
	for _, n := range []int{2 << 20, 200 << 10} {
		_, err := m.Call(context.Background(), "echo", bytes.Repeat([]byte{0xff}, n))
		testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonMemoryLimit)
		mustEcho(t, m, "next")
	}
}

// TestTimeoutReportsAppliedDeadline: a caller deadline shorter than the
// plugin's limit is the one the timeout error names.
func TestTimeoutReportsAppliedDeadline(t *testing.T) {
	t.Parallel()
	m := mustLoad(t, mustRuntime(t), "hostile", sandbox.Limits{Timeout: 20 * time.Second, Concurrency: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := m.Call(ctx, "loop", nil)
	fe := testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
	// The applied deadline is what remained of the caller's 300 ms when the
	// call started (a loaded machine may have spent a few of them already).
	ms, _ := fe.Data["timeout_ms"].(int64)
	named, perr := time.Duration(0), error(nil)
	if m := regexp.MustCompile(`deadline of ([0-9.]+[mµn]?s)`).FindStringSubmatch(fe.Msg); m != nil {
		named, perr = time.ParseDuration(m[1])
	}
	if ms < 200 || ms > 300 || perr != nil || named > 300*time.Millisecond || named < 200*time.Millisecond || named.Milliseconds() != ms {
		t.Errorf("timeout fault %q with timeout_ms %v; want the applied deadline, about 300ms, named in both", fe.Msg, fe.Data["timeout_ms"])
	}
}
