package agents

import (
	"context"

	"github.com/skillhost/skillhost/host/internal/plan"
)

// StepExecutor runs plan steps: a step of type "agent" naming a remote
// agent goes through the router (retries, breaker, fallbacks, depth);
// every other step runs on this host's plugins. It is safe for concurrent
// use.
type StepExecutor struct {
	Local  *plan.LocalExecutor
	Router *Router
}

var (
	_ plan.Executor = StepExecutor{}
	_ plan.Reserver = StepExecutor{}
)

// RunStep runs one step.
func (e StepExecutor) RunStep(ctx context.Context, c plan.StepCall) (*plan.StepOutcome, error) {
	if c.Type != plan.TypeAgent || !e.Router.IsRemote(c.Agent) {
		return e.Local.RunStep(ctx, c)
	}
	res, err := e.Router.Call(ctx, Call{Target: c.Agent, Method: c.Action, Input: c.Input, Timeout: c.Timeout,
		SessionID: c.SessionID, RequestID: c.RequestID})
	if err != nil {
		return nil, err
	}
	return &plan.StepOutcome{Output: res.Output, Duration: res.Duration}, nil
}

// Reserve waits for room on this host's plugin; a remote step needs none
// here (its peer has its own limits).
func (e StepExecutor) Reserve(ctx context.Context, c plan.StepCall) (func(), error) {
	if c.Type == plan.TypeAgent && e.Router.IsRemote(c.Agent) {
		return func() {}, nil
	}
	return e.Local.Reserve(ctx, c)
}
