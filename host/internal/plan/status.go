package plan

import (
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// StatusResult is the result of plan/status (and plan/cancel): spec 001's
// fields (plan_id, status, progress, result, error) plus execution_id,
// name, step_results, attempts, per-step states, the webhook's delivery and
// timestamps.
type StatusResult struct {
	PlanID      string                     `json:"plan_id"`
	ExecutionID *string                    `json:"execution_id"`
	Name        string                     `json:"name"`
	Status      string                     `json:"status"`
	Parallel    bool                       `json:"parallel"`
	Progress    Progress                   `json:"progress"`
	Result      json.RawMessage            `json:"result"` // the last step's output (definition order) once completed, else null
	StepResults map[string]json.RawMessage `json:"step_results"`
	Attempts    map[string]int             `json:"attempts"`
	Steps       []StepStatus               `json:"steps"`
	Error       *StepError                 `json:"error"`
	Webhook     *WebhookStatus             `json:"webhook,omitempty"`
	CreatedAt   string                     `json:"created_at"`
	StartedAt   *string                    `json:"started_at"`
	FinishedAt  *string                    `json:"finished_at"`
	// Provenance is the plan's signed chain ({"links": […]}), when the
	// caller asked for it (plan/status "provenance": true) and the host
	// signs; never in webhooks.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// Progress is the progress object of plan/status.
type Progress struct {
	TotalSteps     int `json:"total_steps"`
	CompletedSteps int `json:"completed_steps"`
	// CurrentStep is the first step (in definition order) that is running,
	// retrying or queued; null unless executing.
	CurrentStep *string `json:"current_step"`
	// RunningSteps lists every step running or waiting to retry.
	RunningSteps []string `json:"running_steps"`
}

// StepStatus is one step's state in plan/status.
type StepStatus struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	DependsOn  []string   `json:"depends_on"`
	StartedAt  *string    `json:"started_at"`
	FinishedAt *string    `json:"finished_at"`
	Error      *StepError `json:"error"`
}

// StatusOf renders a record as plan/status reports it.
func StatusOf(rec *Record) StatusResult {
	steps := rec.Definition.Steps
	out := StatusResult{
		PlanID: rec.PlanID, Name: rec.Definition.Name, Status: rec.Status, Parallel: rec.Parallel, Error: rec.Error,
		Progress:    Progress{TotalSteps: len(steps), CompletedSteps: rec.Checkpoint.Completed(), RunningSteps: []string{}},
		Result:      json.RawMessage("null"),
		StepResults: map[string]json.RawMessage{},
		Attempts:    map[string]int{},
		Steps:       make([]StepStatus, len(steps)),
		CreatedAt:   jsonrpc.Timestamp(rec.CreatedAt),
		StartedAt:   optTimestamp(rec.StartedAt), FinishedAt: optTimestamp(rec.FinishedAt),
		Webhook: rec.Webhook.status(),
	}
	if rec.ExecutionID != "" {
		out.ExecutionID = &rec.ExecutionID
	}
	for i, s := range steps {
		st := StepState{Status: StepPending}
		if rec.consistent() {
			st = rec.Checkpoint.Steps[i]
		}
		out.Steps[i] = StepStatus{
			ID: s.ID, Status: st.Status, Attempts: st.Attempts, DependsOn: rec.Definition.dependsOn(i, s),
			StartedAt: optTimestamp(st.StartedAt), FinishedAt: optTimestamp(st.FinishedAt), Error: st.Error,
		}
		if out.Steps[i].DependsOn == nil {
			out.Steps[i].DependsOn = []string{}
		}
		if st.Status == StepCompleted {
			out.StepResults[s.ID] = st.Output
		}
		if st.Attempts > 0 {
			out.Attempts[s.ID] = st.Attempts
		}
		if rec.Status != StatusExecuting {
			continue
		}
		if active(st.Status) && out.Progress.CurrentStep == nil {
			out.Progress.CurrentStep = &out.Steps[i].ID
		}
		if st.Status == StepRunning || st.Status == StepRetrying {
			out.Progress.RunningSteps = append(out.Progress.RunningSteps, s.ID)
		}
	}
	if rec.Status == StatusCompleted && len(steps) > 0 {
		out.Result = out.StepResults[steps[len(steps)-1].ID]
	}
	return out
}

func optTimestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := jsonrpc.Timestamp(*t)
	return &s
}
