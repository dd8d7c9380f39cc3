package plan

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/events"
)

// TestQueuedEventsInOrderAndLate: a runner's queued events are stored in
// the order emitted, those emitted by a step cancelled since included, and
// one emitted after its runner ended (a late progress report) is still
// published rather than lost.
func TestQueuedEventsInOrderAndLate(t *testing.T) {
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
	rec := &Record{PlanID: "q", SessionID: sess, ExecutionID: "exec_q"}
	qctx, stop := e.m.withEventQueue(ctx)
	stepCtx, cancelStep := context.WithCancel(qctx)
	var want []string
	for i := range 10 {
		e.m.emit(stepCtx, rec, events.PlanStepProgress, "s", i, nil)
		want = append(want, string(rune('0'+i)))
	}
	cancelStep()
	stop()
	e.m.emit(stepCtx, rec, events.PlanStepProgress, "s", 9, map[string]any{"late": true})
	want = append(want, "late")
	var got []string
	for len(got) < len(want) {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		var data struct {
			Attempt int  `json:"attempt"`
			Late    bool `json:"late"`
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.Late {
			got = append(got, "late")
		} else {
			got = append(got, string(rune('0'+data.Attempt)))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
