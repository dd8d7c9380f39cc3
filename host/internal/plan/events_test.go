package plan

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/events"
)

// TestPlanEventsInOrder: a subscriber to a session sees a plan's events in
// the order they happened, each with a larger id.
func TestPlanEventsInOrder(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	sess := mustSession(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub, err := e.bus.Subscribe(ctx, events.Filter{SessionID: sess})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	flaky := timeoutStep(work("b", map[string]any{"key": "b", "fail_times": 1}, "a"), 4000)
	flaky["retry"] = map[string]any{"max_attempts": 2}
	mustCreate(t, e, sess, "ev", definition(step("a", "echo", `{}`), flaky))
	rec := mustExecute(t, e, sess, "ev", ExecuteOptions{})
	var got []string
	var last uint64
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		if ev.Seq <= last || ev.SessionID != sess || ev.PlanID != "ev" {
			t.Errorf("event %+v after id %d", ev, last)
		}
		last = ev.Seq
		var data struct {
			ExecutionID string `json:"execution_id"`
			StepID      string `json:"step_id"`
			Attempt     int    `json:"attempt"`
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil || data.ExecutionID != rec.ExecutionID {
			t.Errorf("event data %s: %v", ev.Data, err)
		}
		name := ev.Type
		if data.StepID != "" {
			name += " " + data.StepID + "#" + string(rune('0'+data.Attempt))
		}
		got = append(got, name)
		if ev.Type == events.PlanCompleted || ev.Type == events.PlanFailed {
			break
		}
	}
	want := []string{
		"plan.started",
		"plan.step.started a#1", "plan.step.completed a#1",
		"plan.step.started b#1", "plan.step.retrying b#1",
		"plan.step.started b#2", "plan.step.completed b#2",
		"plan.completed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func timeoutStep(s map[string]any, ms int) map[string]any {
	s["timeout_ms"] = ms
	return s
}
