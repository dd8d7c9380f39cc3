package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

func TestStepRetry(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	retry := func(s map[string]any, attempts int) map[string]any {
		s["retry"] = map[string]any{"max_attempts": attempts, "backoff_ms": 50}
		return s
	}
	timeout := func(s map[string]any, ms int) map[string]any { s["timeout_ms"] = ms; return s }
	tests := []struct {
		name     string
		step     map[string]any
		status   string
		attempts int
		reason   string // of the failure
		runs     int    // how often the stepper's work ran (0: not the work skill)
	}{
		{"times out twice then succeeds", retry(timeout(work("s", map[string]any{"key": "s", "fail_times": 2}), 4000), 3), StatusCompleted, 3, "", 3},
		{"times out more often than allowed", retry(timeout(work("s", map[string]any{"key": "s", "fail_times": 5}), 3000), 2), StatusFailed, 2, fault.ReasonTimeout, 2},
		{"trap is not retried", retry(work("s", map[string]any{}), 3), StatusFailed, 1, fault.ReasonTrap, 0},
		{"plugin error is not retried", retry(step("s", "fail", ""), 3), StatusFailed, 1, fault.ReasonPluginError, 0},
		{"unknown skill is not retried", retry(step("s", "no_such_skill", ""), 3), StatusFailed, 1, fault.ReasonUnknownSkill, 0},
		{"timeout without retry", timeout(work("s", map[string]any{"key": "s", "fail_times": 1}), 3000), StatusFailed, 1, fault.ReasonTimeout, 1},
	}
	tests[2].step["action"] = "crash"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sess := mustSession(t, e)
			mustCreate(t, e, sess, "r", definition(tt.step))
			mustExecute(t, e, sess, "r", ExecuteOptions{})
			st := waitFor(t, e, sess, "r", "the end", finished)
			if st.Status != tt.status || st.Attempts["s"] != tt.attempts {
				t.Fatalf("status %s attempts %v error %+v; want %s after %d attempts", st.Status, st.Attempts, st.Error, tt.status, tt.attempts)
			}
			if tt.runs > 0 {
				// An attempt that times out may end before its guest started
				// (a loaded machine spends the deadline creating the
				// instance): a failed, timed-out step ran at most runs times.
				n := mustRuns(t, e, sess, "s")
				if n != tt.runs && (tt.reason != fault.ReasonTimeout || n < 1 || n > tt.runs) {
					t.Errorf("the step ran %d times, want %d", n, tt.runs)
				}
			}
			s := st.Steps[0]
			if tt.status == StatusCompleted {
				if s.Status != StepCompleted || s.Error != nil || string(st.Result) != `{"key":"s","run":3}` {
					t.Errorf("step %+v result %s", s, st.Result)
				}
				return
			}
			got := map[string]any{"step": s.Status, "reason": st.Error.Details["reason"], "attempt": st.Error.Details["attempt"], "step_reason": s.Error.Details["reason"]}
			want := map[string]any{"step": StepFailed, "reason": tt.reason, "attempt": float64(tt.attempts), "step_reason": tt.reason}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("failure (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReferenceMissingFailsTheStep: a reference to a path the output lacks
// fails the step at run time (not retried), naming the reference.
func TestReferenceMissingFailsTheStep(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	sess := mustSession(t, e)
	b := step("b", "echo", `{"y":"${steps.a.output.nope}"}`)
	b["retry"] = map[string]any{"max_attempts": 3}
	mustCreate(t, e, sess, "p", definition(step("a", "echo", `{"x":1}`), b))
	mustExecute(t, e, sess, "p", ExecuteOptions{})
	st := waitFor(t, e, sess, "p", "failure", finished)
	if st.Status != StatusFailed || st.Error == nil || st.Error.Code != fault.InvalidParams.Code() ||
		st.Error.Details["reason"] != fault.ReasonReferenceMissing || st.Attempts["b"] != 1 {
		t.Fatalf("status %s attempts %v error %+v", st.Status, st.Attempts, st.Error)
	}
	if want := `step "b" failed: step "b": ${steps.a.output.nope}: no member "nope"`; st.Error.Message != want {
		t.Errorf("message %q, want %q", st.Error.Message, want)
	}
}
