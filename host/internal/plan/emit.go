package plan

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/skillhost/skillhost/host/internal/events"
)

// emit publishes a plan event: data plus execution_id, and step_id and
// attempt for a step event. Every event but progress carries a dedupe id
// (execution, type, step, attempt), so one re-published after a crash is
// stored once. Failures are logged; events never fail a plan.
func (m *Manager) emit(ctx context.Context, rec *Record, typ, stepID string, attempt int, data map[string]any) {
	if m.events == nil {
		return
	}
	if data == nil {
		data = map[string]any{}
	}
	data["execution_id"] = rec.ExecutionID
	id := rec.ExecutionID + "/" + typ
	if stepID != "" {
		data["step_id"], data["attempt"] = stepID, attempt
		id += "/" + stepID + "/" + strconv.Itoa(attempt)
	}
	if typ == events.PlanStepProgress {
		id = ""
	}
	raw, err := json.Marshal(data)
	if err != nil {
		m.log.Warn("plan: encoding an event failed", "type", typ, "err", err)
		return
	}
	if _, err := m.events.Publish(ctx, events.Event{ID: id, Type: typ, Owner: rec.Owner, SessionID: rec.SessionID, PlanID: rec.PlanID, Data: raw}); err != nil && ctx.Err() == nil {
		m.log.Warn("plan: publishing an event failed", "type", typ, "plan_id", rec.PlanID, "err", err)
	}
}
