package plan

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// Method names served by Register.
const (
	MethodCreate  = "_cleveragents/plan/create"
	MethodExecute = "_cleveragents/plan/execute"
	MethodStatus  = "_cleveragents/plan/status"
	MethodCancel  = "_cleveragents/plan/cancel" // beyond spec 001
	MethodList    = "_cleveragents/plan/list"   // beyond spec 001
)

// Register adds the plan methods to eng, each wrapped by mw when it is not
// nil (e.g. the metrics middleware).
func (m *Manager) Register(eng *jsonrpc.Engine, mw func(method string, h jsonrpc.Handler) jsonrpc.Handler) {
	for method, h := range map[string]jsonrpc.Handler{
		MethodCreate:  m.rpcCreate,
		MethodExecute: m.rpcExecute,
		MethodStatus:  m.rpcStatus,
		MethodCancel:  m.rpcCancel,
		MethodList:    m.rpcList,
		VerifyMethod:  m.verify,
	} {
		if mw != nil {
			h = mw(method, h)
		}
		eng.Register(method, h)
	}
}

type createParams struct {
	SessionID      string          `json:"session_id"`
	PlanID         string          `json:"plan_id"`
	PlanDefinition json.RawMessage `json:"plan_definition"`
	Metadata       json.RawMessage `json:"metadata"`
}

type createResult struct {
	PlanID    string `json:"plan_id"`
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	Name      string `json:"name"`
	Steps     int    `json:"total_steps"`
}

func (m *Manager) rpcCreate(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p createParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	rec, err := m.Create(ctx, CreateRequest{SessionID: p.SessionID, PlanID: p.PlanID, Definition: p.PlanDefinition, Metadata: p.Metadata})
	if err != nil {
		return nil, err
	}
	return createResult{
		PlanID: rec.PlanID, SessionID: rec.SessionID, Status: rec.Status, CreatedAt: jsonrpc.Timestamp(rec.CreatedAt),
		Name: rec.Definition.Name, Steps: len(rec.Definition.Steps),
	}, nil
}

type executeParams struct {
	SessionID        string          `json:"session_id"`
	PlanID           string          `json:"plan_id"`
	Input            json.RawMessage `json:"input"`
	ExecutionOptions *struct {
		Parallel      *bool    `json:"parallel"`
		Timeout       *float64 `json:"timeout"` // milliseconds, whole plan
		Webhook       string   `json:"webhook"`
		WebhookSecret string   `json:"webhook_secret"`
	} `json:"execution_options"`
}

type executeResult struct {
	PlanID      string `json:"plan_id"`
	ExecutionID string `json:"execution_id"`
	Status      string `json:"status"`
	StartedAt   string `json:"started_at"`
}

func (m *Manager) rpcExecute(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p executeParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if err := requirePlanID(p.PlanID); err != nil {
		return nil, err
	}
	opts := ExecuteOptions{Input: p.Input}
	if o := p.ExecutionOptions; o != nil {
		opts.Parallel = o.Parallel != nil && *o.Parallel
		opts.Webhook, opts.WebhookSecret = o.Webhook, o.WebhookSecret
		if o.Timeout != nil {
			if *o.Timeout <= 0 || *o.Timeout > float64(m.cfg.MaxTimeout.Milliseconds()) {
				return nil, badField("execution_options.timeout", "must be a positive number of milliseconds, at most "+
					m.cfg.MaxTimeout.String())
			}
			opts.Timeout = time.Duration(*o.Timeout * float64(time.Millisecond))
		}
	}
	rec, err := m.Execute(ctx, p.SessionID, p.PlanID, opts)
	if err != nil {
		return nil, err
	}
	return executeResult{PlanID: rec.PlanID, ExecutionID: rec.ExecutionID, Status: rec.Status, StartedAt: jsonrpc.Timestamp(*rec.StartedAt)}, nil
}

type planParams struct {
	SessionID string `json:"session_id"`
	PlanID    string `json:"plan_id"`
}

// statusParams are plan/status's params: provenance asks for the plan's
// signed chain in the result.
type statusParams struct {
	SessionID  string `json:"session_id"`
	PlanID     string `json:"plan_id"`
	Provenance bool   `json:"provenance"`
}

func (m *Manager) rpcStatus(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p statusParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if err := requirePlanID(p.PlanID); err != nil {
		return nil, err
	}
	rec, err := m.Status(ctx, p.SessionID, p.PlanID)
	if err != nil {
		return nil, err
	}
	st := StatusOf(rec)
	if p.Provenance {
		st.Provenance = rec.Provenance
	}
	return st, nil
}

func (m *Manager) rpcCancel(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p planParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if err := requirePlanID(p.PlanID); err != nil {
		return nil, err
	}
	rec, err := m.Cancel(ctx, p.SessionID, p.PlanID)
	if err != nil {
		return nil, err
	}
	return StatusOf(rec), nil
}

func requirePlanID(id string) error {
	if id == "" {
		return fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "plan_id is required").With("field", "plan_id")
	}
	return nil
}

type listParams struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
	Cursor    string `json:"cursor"`
	Limit     int    `json:"limit"`
}

func (m *Manager) rpcList(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p listParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	return m.List(ctx, ListRequest(p))
}
