package agents

import (
	"context"
	"encoding/json"

	"github.com/skillhost/skillhost/host/internal/plan"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// StepExecutor runs plan steps: a step of type "agent" naming a remote
// agent goes through the router (retries, breaker, fallbacks, depth);
// every other step runs on this host's plugins. It is safe for concurrent
// use.
type StepExecutor struct {
	Local  *plan.LocalExecutor
	Router *Router
	// Provenance: the plan records each remote step's peer result
	// (StepOutcome.Peer), and a peer that signs its tasks is asked for its
	// signed task. Default false: no peer results.
	Provenance bool
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
		Provenance: e.Provenance, Progress: c.Progress})
	if err != nil {
		return nil, err
	}
	out := &plan.StepOutcome{Output: res.Output, Duration: res.Duration}
	if e.Provenance && res.Remote != nil {
		if out.Peer, err = peerResult(res); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// peerResult is what the plan's chain records of a remote answer: the
// peer's task (over A2A: its id, final state and the head of its signed
// chain) and the digest of the output received.
func peerResult(res *Result) (*provenance.PeerResult, error) {
	r := res.Remote
	var task []byte
	if !r.Interface.Extension { // A2A SendMessage: Raw is the peer's task (or a message)
		task = r.Raw
	}
	return provenance.PeerOf(res.AgentID, r.Interface.URL, r.JWKS, task, json.RawMessage(res.Output))
}

// Reserve waits for room on this host's plugin; a remote step needs none
// here (its peer has its own limits).
func (e StepExecutor) Reserve(ctx context.Context, c plan.StepCall) (func(), error) {
	if c.Type == plan.TypeAgent && e.Router.IsRemote(c.Agent) {
		return func() {}, nil
	}
	return e.Local.Reserve(ctx, c)
}
