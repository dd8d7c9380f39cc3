package plan

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// manyRefs is a one-step definition whose params hold n exact ${plan.input}
// references: 16 bytes each, so 12,000 of them are a ~190 KB definition.
func manyRefs(n int, ref string) json.RawMessage {
	refs := strings.TrimSuffix(strings.Repeat(`"`+ref+`",`, n), ",")
	return json.RawMessage(`{"name":"amplifier","steps":[{"id":"a","type":"skill","action":"echo","params":{"a":[` + refs + `]}}]}`)
}

// bigInput is a JSON string of n bytes of text.
func bigInput(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

// allocated is how many bytes fn allocated on the Go heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestResolveParamsCountsBeforeBuilding is finding 1 of issue 20: a step
// whose params hold ~12,000 exact ${plan.input} references to a 200 KiB
// input made resolution encode every copy (several GiB) before its size
// check, and the host died of it. Resolution now counts the resolved size
// first and refuses with params_too_large having allocated almost nothing.
// Not parallel: the heap is measured for the whole process.
func TestResolveParamsCountsBeforeBuilding(t *testing.T) {
	mustCountBeforeBuilding(t, 400, 12_000)
}

// maxResolveAlloc bounds what refusing an amplifying step may allocate.
const maxResolveAlloc = 64 << 20

// mustCountBeforeBuilding resolves params of n exact references to a
// 200 KiB input for each n in turn, and fails unless each is refused with
// params_too_large within maxResolveAlloc. Start with a small n: without
// counting, 400 references already allocate ~300 MiB (and fail), so the
// larger cases never run against code that would take GiB.
func mustCountBeforeBuilding(t *testing.T, counts ...int) {
	t.Helper()
	input := bigInput(200 << 10)
	for _, n := range counts {
		ok := t.Run(fmt.Sprintf("%d references", n), func(t *testing.T) {
			def, err := ParseDefinition(manyRefs(n, "${plan.input}"), Config{})
			if err != nil {
				t.Fatal(err)
			}
			var ferr *fault.Error
			got := allocated(func() {
				_, ferr = def.resolveParams(0, func(int) json.RawMessage { return nil }, input, int(config.Defaults().Plans.MaxRecord))
			})
			if ferr == nil || ferr.Reason != fault.ReasonParamsTooLarge {
				t.Errorf("error %v, want params_too_large", ferr)
			}
			t.Logf("allocated %d KiB", got>>10)
			if got > maxResolveAlloc {
				t.Errorf("resolution allocated %d MiB before refusing, want < %d MiB", got>>20, maxResolveAlloc>>20)
			}
		})
		if !ok {
			t.Fatalf("not going on: %d references already allocate too much", n)
		}
	}
}

// TestAmplifyingPlansAreRefused: the 12,000-reference plan of issue 20
// through the Manager. Referencing the input, it is refused at
// plan/execute (its size is known then) before any job is queued;
// referencing a step's output, that step fails with params_too_large when
// it runs. Either way the host goes on serving plans. Not parallel (heap
// measured); guarded like TestResolveParamsCountsBeforeBuilding so it never
// runs against resolution that would take GiB.
func TestAmplifyingPlansAreRefused(t *testing.T) {
	mustCountBeforeBuilding(t, 400)
	e := mustEnv(t, "", Config{})
	sess, ctx := mustSession(t, e), localCtx()
	input := bigInput(200 << 10)

	mustCreate(t, e, sess, "in", manyRefs(12_000, "${plan.input}"))
	var err error
	got := allocated(func() { _, err = e.m.Execute(ctx, sess, "in", ExecuteOptions{Input: input}) })
	fe := testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonParamsTooLarge)
	if diff := cmp.Diff(map[string]any{"field": "input", "step_id": "a"}, map[string]any{"field": fe.Data["field"], "step_id": fe.Data["step_id"]}); diff != "" {
		t.Errorf("error data (-want +got):\n%s", diff)
	}
	if got > maxResolveAlloc {
		t.Errorf("plan/execute allocated %d MiB before refusing, want < %d MiB", got>>20, maxResolveAlloc>>20)
	}
	if st := StatusOf(mustRecord(t, e, sess, "in")); st.Status != StatusCreated {
		t.Errorf("refused plan is %s, want %s", st.Status, StatusCreated)
	}

	refs := strings.TrimSuffix(strings.Repeat(`"${steps.a.output}",`, 12_000), ",")
	mustCreate(t, e, sess, "out", json.RawMessage(`{"name":"amplifier","steps":[`+
		`{"id":"a","type":"skill","action":"echo","params":{"x":"${plan.input}"}},`+
		`{"id":"b","type":"skill","action":"echo","params":{"a":[`+refs+`]}}]}`))
	mustExecute(t, e, sess, "out", ExecuteOptions{Input: input})
	st := waitFor(t, e, sess, "out", "failure", finished)
	if st.Status != StatusFailed || st.Error == nil || st.Error.Code != fault.ResourceExhausted.Code() ||
		st.Error.Details["reason"] != fault.ReasonParamsTooLarge || st.Error.Details["step_id"] != "b" {
		t.Fatalf("status %s error %+v, want failed with params_too_large at step b", st.Status, st.Error)
	}
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 1}, st.Attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}

	mustCreate(t, e, sess, "after", definition(step("s", "echo", `{"ok":true}`)))
	mustExecute(t, e, sess, "after", ExecuteOptions{})
	if st := waitFor(t, e, sess, "after", "completion", finished); st.Status != StatusCompleted {
		t.Errorf("the next plan is %s, error %+v", st.Status, st.Error)
	}
}

// FuzzResolveParams: resolving references never panics; when it succeeds
// the count measure makes before building equals the resolved params' size
// exactly, and a limit one byte smaller refuses them with params_too_large.
func FuzzResolveParams(f *testing.F) {
	f.Add(`{"x":"${steps.a.output}"}`, `{"k":"v"}`, `"in"`)
	f.Add(`{"t":"a ${steps.a.output.o} b","e":"$${x}","n":[1,"${plan.input}",true,null]}`, `{"o":{"q":"\"\\\n\u0001\u2028é<&>"}}`, `[1,2.50,"x"]`)
	f.Add(`{"t":"${plan.input}${plan.input}","u":"\u0000\u001f\t"}`, `null`, `"\"quoted\" \\ \ud800 \u2029"`)
	f.Add(`{"deep":[[{"a":"${steps.a.output.0.1}"}]],"s":"=${steps.a.output.0}"}`, `[[1,{"z":"\u007f"}]]`, `{}`)
	f.Fuzz(func(t *testing.T, params, output, input string) {
		def, err := ParseDefinition(json.RawMessage(`{"name":"f","steps":[{"id":"a","type":"skill","action":"e"},`+
			`{"id":"b","type":"skill","action":"e","params":`+params+`}]}`), Config{})
		if err != nil {
			return
		}
		out := func(int) json.RawMessage { return json.RawMessage(output) }
		got, ferr := def.resolveParams(1, out, json.RawMessage(input), 1<<20)
		if ferr != nil {
			if ferr.Reason != fault.ReasonReferenceMissing && ferr.Reason != fault.ReasonParamsTooLarge {
				t.Fatalf("unexpected error %v", ferr)
			}
			return
		}
		if !json.Valid(got) {
			t.Fatalf("resolved params %q are not JSON", got)
		}
		if string(got) == string(def.Steps[1].Params) {
			return // no reference or escape: kept as written, not counted
		}
		doc, _ := decodeNumbers(def.Steps[1].Params)
		r := &resolver{d: def, index: def.index(), output: out, input: json.RawMessage(input), roots: map[int]any{}}
		m := &meter{max: 1 << 30}
		if fits, err := r.measure(doc, m); !fits || err != nil || m.n != len(got) {
			t.Fatalf("measured %d bytes (fits %v, err %v), resolved %d: %s", m.n, fits, err, len(got), got)
		}
		if _, ferr := def.resolveParams(1, out, json.RawMessage(input), len(got)-1); ferr == nil || ferr.Reason != fault.ReasonParamsTooLarge {
			t.Fatalf("limit %d: error %v, want params_too_large", len(got)-1, ferr)
		}
	})
}
