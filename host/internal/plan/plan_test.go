package plan

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func TestPlanRunsStepsInOrder(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	sess := mustSession(t, e)
	def := definition(
		step("fetch", "echo", `{"text":"hello"}`),
		map[string]any{"id": "shout", "type": "agent", "agent": "hostile", "action": "echo", "params": json.RawMessage(`{"text":"HELLO"}`)},
		step("count", "burn", `{"n":1000,"words":1}`),
	)
	mustCreate(t, e, sess, "p1", def)
	rec := mustExecute(t, e, sess, "p1", ExecuteOptions{})
	if rec.Status != StatusExecuting || rec.ExecutionID == "" || rec.StartedAt == nil {
		t.Fatalf("execute returned %+v", rec)
	}
	st := waitFor(t, e, sess, "p1", "completion", finished)
	want := StatusResult{
		PlanID: "p1", ExecutionID: &rec.ExecutionID, Name: "test plan", Status: StatusCompleted,
		Progress: Progress{TotalSteps: 3, CompletedSteps: 3, RunningSteps: []string{}},
		Result:   json.RawMessage(`{"n":1000,"words":1}`),
		StepResults: map[string]json.RawMessage{
			"fetch": json.RawMessage(`{"text":"hello"}`),
			"shout": json.RawMessage(`{"text":"HELLO"}`),
			"count": json.RawMessage(`{"n":1000,"words":1}`),
		},
		Attempts: map[string]int{"fetch": 1, "shout": 1, "count": 1},
		Steps: []StepStatus{
			{ID: "fetch", Status: StepCompleted, Attempts: 1, DependsOn: []string{}},
			{ID: "shout", Status: StepCompleted, Attempts: 1, DependsOn: []string{"fetch"}},
			{ID: "count", Status: StepCompleted, Attempts: 1, DependsOn: []string{"shout"}},
		},
	}
	ignore := func(s StatusResult) StatusResult {
		s.CreatedAt, s.StartedAt, s.FinishedAt = "", nil, nil
		for i := range s.Steps {
			s.Steps[i].StartedAt, s.Steps[i].FinishedAt = nil, nil
		}
		return s
	}
	if diff := cmp.Diff(want, ignore(st)); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if st.FinishedAt == nil || st.StartedAt == nil || *st.FinishedAt < *st.StartedAt {
		t.Errorf("timestamps: started %v finished %v", st.StartedAt, st.FinishedAt)
	}
}

func TestFailedStepFailsThePlan(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	tests := []struct {
		name     string
		failing  map[string]any
		opts     ExecuteOptions
		code     int
		reason   string
		attempts map[string]int
	}{
		{"trap", step("bad", "trap", ""), ExecuteOptions{}, fault.SkillFailed.Code(), fault.ReasonTrap, nil},
		{"plugin error", step("bad", "fail", ""), ExecuteOptions{}, fault.SkillFailed.Code(), fault.ReasonPluginError, nil},
		{"step timeout", func() map[string]any { s := step("bad", "loop", ""); s["timeout_ms"] = 300; return s }(),
			ExecuteOptions{}, fault.Timeout.Code(), fault.ReasonTimeout, nil},
		{"plan timeout", step("bad", "loop", ""), ExecuteOptions{Timeout: 400 * time.Millisecond},
			fault.Timeout.Code(), fault.ReasonTimeout, nil},
		{"unknown skill", step("bad", "no_such_skill", ""), ExecuteOptions{}, fault.InvalidParams.Code(), fault.ReasonUnknownSkill, nil},
		{"unknown agent", map[string]any{"id": "bad", "type": "agent", "agent": "nobody", "action": "echo"},
			ExecuteOptions{}, fault.AgentNotFound.Code(), fault.ReasonUnknownAgent, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sess := mustSession(t, e)
			mustCreate(t, e, sess, "p", definition(step("ok", "echo", `{"a":1}`), tt.failing, step("never", "echo", "")))
			start := time.Now()
			mustExecute(t, e, sess, "p", tt.opts)
			st := waitFor(t, e, sess, "p", "failure", finished)
			if st.Status != StatusFailed || st.Error == nil {
				t.Fatalf("status %s, error %+v; want failed", st.Status, st.Error)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("failure took %v", d)
			}
			if diff := cmp.Diff(map[string]any{"code": tt.code, "step_id": "bad", "reason": tt.reason, "attempt": float64(1)},
				map[string]any{"code": st.Error.Code, "step_id": st.Error.Details["step_id"], "reason": st.Error.Details["reason"], "attempt": st.Error.Details["attempt"]}); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(Progress{TotalSteps: 3, CompletedSteps: 1, RunningSteps: []string{}}, st.Progress); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			if _, ran := st.Attempts["never"]; ran || string(st.Result) != "null" {
				t.Errorf("a step after the failure ran (attempts %v) or a result was set (%s)", st.Attempts, st.Result)
			}
		})
	}
}

func TestPlanMethodErrors(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	ctx := localCtx()
	owner, other := mustSession(t, e), mustSession(t, e)
	mustCreate(t, e, owner, "mine", definition(step("s", "echo", `{}`)))
	mustCreate(t, e, owner, "slow", definition(step("s", "loop", "")))
	closed := mustSession(t, e)
	if _, err := e.st.CloseSession(ctx, closed); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		call   func() error
		kind   fault.Kind
		reason string
	}{
		{"status from another session", func() error { _, err := e.m.Status(ctx, other, "mine"); return err }, fault.PlanNotFound, fault.ReasonPlanNotFound},
		{"execute from another session", func() error { _, err := e.m.Execute(ctx, other, "mine", ExecuteOptions{}); return err }, fault.PlanNotFound, fault.ReasonPlanNotFound},
		{"cancel from another session", func() error { _, err := e.m.Cancel(ctx, other, "mine"); return err }, fault.PlanNotFound, fault.ReasonPlanNotFound},
		{"unknown plan", func() error { _, err := e.m.Status(ctx, owner, "nope"); return err }, fault.PlanNotFound, fault.ReasonPlanNotFound},
		{"unknown session", func() error { _, err := e.m.Status(ctx, "sess_nope", "mine"); return err }, fault.SessionNotFound, fault.ReasonSessionNotFound},
		{"closed session", func() error { _, err := e.m.Status(ctx, closed, "mine"); return err }, fault.SessionNotFound, fault.ReasonSessionClosed},
		{"duplicate id", func() error {
			_, err := e.m.Create(ctx, CreateRequest{SessionID: owner, PlanID: "mine", Definition: definition(step("s", "echo", ""))})
			return err
		}, fault.InvalidState, fault.ReasonPlanExists},
		{"cancel a created plan", func() error { _, err := e.m.Cancel(ctx, owner, "mine"); return err }, fault.InvalidState, fault.ReasonPlanNotExecuting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testutil.MustFault(t, tt.call(), tt.kind, tt.reason)
		})
	}
	// The same id in another session is another plan.
	mustCreate(t, e, other, "mine", definition(step("s", "echo", `{}`)))

	mustExecute(t, e, owner, "slow", ExecuteOptions{})
	_, err := e.m.Execute(ctx, owner, "slow", ExecuteOptions{})
	testutil.MustFault(t, err, fault.InvalidState, fault.ReasonPlanExecuting)
	if _, err := e.m.Cancel(ctx, owner, "slow"); err != nil {
		t.Fatal(err)
	}

	mustExecute(t, e, owner, "mine", ExecuteOptions{})
	waitFor(t, e, owner, "mine", "completion", finished)
	_, err = e.m.Execute(ctx, owner, "mine", ExecuteOptions{})
	testutil.MustFault(t, err, fault.InvalidState, fault.ReasonPlanCompleted)
}

func TestCancelStopsTheRunningStep(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", plans(func(c *Config) { c.Workers = 1 }))
	ctx := localCtx()
	sess := mustSession(t, e)
	mustCreate(t, e, sess, "forever", definition(step("spin", "loop", ""), step("after", "echo", "")))
	mustExecute(t, e, sess, "forever", ExecuteOptions{})
	waitFor(t, e, sess, "forever", "the loop to start", func(s StatusResult) bool { return s.Attempts["spin"] == 1 })
	rec, err := e.m.Cancel(ctx, sess, "forever")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != StatusCancelled || rec.FinishedAt == nil {
		t.Fatalf("cancel returned %+v", rec)
	}
	// With one worker, a second plan can only run once the loop was stopped
	// (its skill limit is 10s; this must be much faster).
	start := time.Now()
	mustCreate(t, e, sess, "next", definition(step("s", "echo", `{"ok":true}`)))
	mustExecute(t, e, sess, "next", ExecuteOptions{})
	if st := waitFor(t, e, sess, "next", "completion", finished); st.Status != StatusCompleted {
		t.Fatalf("next plan: %s", st.Status)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancelled step kept its worker for %v", d)
	}
	st := StatusOf(mustRecord(t, e, sess, "forever"))
	if diff := cmp.Diff(Progress{TotalSteps: 2, RunningSteps: []string{}}, st.Progress); st.Status != StatusCancelled || diff != "" || st.Error != nil {
		t.Errorf("cancelled plan: status %s error %+v progress diff %s", st.Status, st.Error, diff)
	}
	// A cancelled plan may be executed again, from its first step.
	mustExecute(t, e, sess, "forever", ExecuteOptions{Timeout: time.Second})
	if st := waitFor(t, e, sess, "forever", "timeout", finished); st.Status != StatusFailed || st.Attempts["spin"] != 1 {
		t.Errorf("re-execution: status %s attempts %v", st.Status, st.Attempts)
	}
}

func mustRecord(t *testing.T, e *env, sess, planID string) *Record {
	t.Helper()
	rec, err := e.m.Status(localCtx(), sess, planID)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestRestartResumesFromCheckpoint stops the runner while step 2 of 3 runs
// and starts a new store and runner on the same data folder: the plan
// completes, step 1 ran exactly once and step 2 ran again.
func TestRestartResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		crash bool // close the store under the running runner (no hand-back)
	}{
		{"graceful shutdown", false},
		{"crash", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := plans(func(c *Config) { c.AckWait = time.Second })
			e := mustEnv(t, "", cfg)
			n := burnIterations(t, e, 1500*time.Millisecond)
			sess := mustSession(t, e)
			mustCreate(t, e, sess, "resume", definition(
				step("first", "echo", `{"i":1}`),
				step("slow", "burn", fmt.Sprintf(`{"n":%d}`, n)),
				step("last", "echo", `{"i":3}`),
			))
			mustExecute(t, e, sess, "resume", ExecuteOptions{})
			waitFor(t, e, sess, "resume", "step 2 to run", func(s StatusResult) bool {
				return s.Progress.CompletedSteps == 1 && s.Attempts["slow"] == 1
			})
			if tt.crash {
				_ = e.st.Close()
				e.stop()
			} else {
				e.stop()
				_ = e.st.Close()
			}
			e2 := mustEnv(t, e.data, cfg)
			st := waitFor(t, e2, sess, "resume", "completion", finished)
			if st.Status != StatusCompleted {
				t.Fatalf("status %s error %+v", st.Status, st.Error)
			}
			if diff := cmp.Diff(map[string]int{"first": 1, "slow": 2, "last": 1}, st.Attempts); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(`{"i":3}`, string(st.Result)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
