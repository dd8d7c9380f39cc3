package agents

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/remote"
)

// Local runs the skills of this host's plugins (*plugin.Registry).
type Local interface {
	Execute(ctx context.Context, call plugin.Call) (*plugin.Outcome, error)
}

// Remote reaches the configured peers (*remote.Peers).
type Remote interface {
	Has(id string) bool
	Fallbacks(id string) []string
	Timeout(id string) time.Duration
	Call(ctx context.Context, c remote.Call) (*remote.Result, error)
}

// Observer counts fallbacks for /metrics.
type Observer interface {
	Fallback(agent, to string)
}

// Config configures a Router.
type Config struct {
	// MaxDepth is agents.max_call_depth: one hop past it fails with
	// call_depth. Required.
	MaxDepth int
	// Guard takes a rate token of the principal for each nested call.
	// Optional. Default: none.
	Guard *auth.Guard
	// Logger. Optional. Default: discard.
	Logger *slog.Logger
	// Observer. Optional. Default: none.
	Observer Observer
}

// Router routes agent calls. Create it with New.
type Router struct {
	local  Local
	remote Remote // nil: no remote agents
	cfg    Config
}

var _ hostfn.AgentCaller = (*Router)(nil)

// New returns a router over this host's plugins and its peers (nil: none).
func New(local Local, peers Remote, cfg Config) *Router {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Router{local: local, remote: peers, cfg: cfg}
}

// Call is one agent call.
type Call struct {
	Target string          // agent id: a remote agent, else a plugin name
	Method string          // skill id
	Input  json.RawMessage // JSON input; empty means {}
	// Timeout caps the call, fallbacks included; 0: the agent's own limit
	// (a plugin's timeout, a peer's timeout). The context's deadline always
	// caps it.
	// Its session and request id are the invocation's on ctx
	// (auth.InvocationFrom).
	Timeout time.Duration
	// Nested marks a call a plugin makes (agent_call): one hop, one rate
	// token of the principal.
	Nested bool
	// Provenance asks a remote peer that signs its tasks for its signed
	// result (remote.Call.Provenance).
	Provenance bool
	// Progress receives a remote peer's progress while the call runs
	// (remote.Call.Progress): the caller's own sink, an A2A task's or a
	// plan step's. Optional.
	Progress hostfn.ProgressSink
}

// Result is the answer of the agent that answered.
type Result struct {
	AgentID  string // the agent that answered: Target, or one of its fallbacks
	Method   string
	Output   []byte
	Duration time.Duration
	// FallbackFrom is Target when a fallback answered, else "".
	FallbackFrom string
	Local        *plugin.Outcome // set when a plugin of this host answered
	Remote       *remote.Result  // set when a peer answered (its raw result included)
}

// IsRemote reports whether id names a remote agent (which shadows a plugin
// of the same name).
func (r *Router) IsRemote(id string) bool { return r.remote != nil && r.remote.Has(id) }

// Call routes c: a remote agent through its peer (with retries, breaker
// and fallbacks), anything else to the plugin of that name. Failures are
// *fault.Error values in the chain.
func (r *Router) Call(ctx context.Context, c Call) (*Result, error) {
	isRemote := r.IsRemote(c.Target)
	depth := Depth(ctx)
	if c.Nested || isRemote {
		depth++
	}
	if depth > r.cfg.MaxDepth {
		return nil, fault.Newf(fault.ResourceExhausted, fault.ReasonCallDepth,
			"calling agent %q would make a chain of %d agent calls; agents.max_call_depth is %d", c.Target, depth, r.cfg.MaxDepth).
			With("depth", depth).With("limit", "agents.max_call_depth").With("agent_id", c.Target)
	}
	ctx = WithDepth(ctx, depth)
	if c.Nested && r.cfg.Guard != nil && auth.Attached(ctx) {
		if err := r.cfg.Guard.AdmitRate(auth.From(ctx)); err != nil {
			return nil, err
		}
	}
	if !isRemote {
		return r.callLocal(ctx, c, c.Target)
	}
	timeout := r.remote.Timeout(c.Target)
	if c.Timeout > 0 {
		timeout = min(timeout, c.Timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := r.callOne(ctx, c, c.Target, depth)
	if err == nil || !fallible(err) {
		return res, err
	}
	return r.fallback(ctx, c, depth, err)
}

// fallback tries c.Target's fallbacks in order after it failed with
// primary: the first answer wins; a fallback that fails for good ends the
// search with its error; one the principal may not use is skipped.
func (r *Router) fallback(ctx context.Context, c Call, depth int, primary error) (*Result, error) {
	last, tried := primary, []string{c.Target}
	for _, fb := range r.remote.Fallbacks(c.Target) {
		if ctx.Err() != nil {
			break
		}
		res, err := r.callOne(ctx, c, fb, depth)
		if denied(err) {
			r.cfg.Logger.DebugContext(ctx, "agent call: fallback skipped, the caller may not use it", "agent", c.Target, "fallback", fb)
			continue
		}
		tried = append(tried, fb)
		if err == nil {
			res.FallbackFrom = c.Target
			r.cfg.Logger.InfoContext(ctx, "agent call answered by a fallback", "agent", c.Target, "fallback", fb,
				"primary_reason", fault.From(primary).WireReason(), "request_id", auth.InvocationFrom(ctx).RequestID)
			if r.cfg.Observer != nil {
				r.cfg.Observer.Fallback(c.Target, fb)
			}
			return res, nil
		}
		last = err
		if !fallible(err) {
			break
		}
	}
	fe := fault.From(last).With("tried", tried)
	if remote.Retryable(last) || localTransient(last) {
		return nil, retryableError{fe}
	}
	return nil, fe
}

// callOne calls agent (the target or a fallback): a remote agent if one is
// configured under that id, else the plugin of that name.
func (r *Router) callOne(ctx context.Context, c Call, agent string, depth int) (*Result, error) {
	if !r.IsRemote(agent) {
		return r.callLocal(ctx, c, agent)
	}
	if auth.Attached(ctx) {
		if err := auth.From(ctx).AllowAgent(agent); err != nil {
			return nil, err
		}
	}
	inv := auth.InvocationFrom(ctx)
	res, err := r.remote.Call(ctx, remote.Call{ID: agent, Method: c.Method, Input: c.Input, Timeout: c.Timeout,
		SessionID: inv.SessionID, RequestID: inv.RequestID, Depth: depth, Provenance: c.Provenance, Progress: c.Progress})
	if err != nil {
		return nil, err
	}
	return &Result{AgentID: agent, Method: c.Method, Output: res.Output, Duration: res.Duration, Remote: res}, nil
}

// callLocal runs the skill c.Method of the plugin agent; its host
// functions read the call's session from the invocation on ctx. The
// registry checks the principal's scopes.
func (r *Router) callLocal(ctx context.Context, c Call, agent string) (*Result, error) {
	ctx = hostfn.WithCall(ctx, &hostfn.Call{Plugin: agent, Skill: c.Method})
	out, err := r.local.Execute(ctx, plugin.Call{SkillID: c.Method, Agent: agent, Input: c.Input, Timeout: c.Timeout})
	if err != nil {
		return nil, err
	}
	return &Result{AgentID: agent, Method: c.Method, Output: out.Output, Duration: out.Duration, Local: out}, nil
}

// CallAgent makes a plugin's nested call (the agent_call host function). A
// remote peer's progress goes to the calling plugin's own progress sink
// (its A2A task's, its plan step's), as if the plugin reported it. The
// nested call runs as the calling one's session (the one an A2A task's
// context function opened too) and request id.
func (r *Router) CallAgent(ctx context.Context, c hostfn.AgentCall) (*hostfn.AgentResult, error) {
	progress := hostfn.CallFrom(ctx).Progress
	inv := auth.InvocationFrom(ctx)
	inv.SessionID, inv.RequestID = c.SessionID, c.RequestID
	res, err := r.Call(auth.Invoke(ctx, inv), Call{Target: c.Target, Method: c.Method, Input: c.Input, Timeout: c.Timeout,
		Nested: true, Provenance: c.Provenance, Progress: progress})
	if err != nil {
		return nil, err
	}
	out := &hostfn.AgentResult{AgentID: res.AgentID, FallbackFrom: res.FallbackFrom, Method: res.Method, Output: res.Output,
		Duration: res.Duration}
	if c.Provenance && res.Remote != nil {
		if out.Peer, err = peerResult(res); err != nil {
			r.cfg.Logger.WarnContext(ctx, "agent call: the peer's result is not recorded in provenance", "agent", res.AgentID, "err", err)
		}
	}
	return out, nil
}

// fallible reports whether err lets the next fallback be tried: a peer
// that failed retryably, could not be used or is isolated, or a plugin that
// timed out or had no room.
func fallible(err error) bool { return remote.Fallible(err) || localTransient(err) }

// localTransient reports a plugin failure that may go away: a timeout, a
// saturated pool, a rate limit.
func localTransient(err error) bool {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		return false
	}
	return fe.Kind == fault.Timeout ||
		fe.Kind == fault.ResourceExhausted && (fe.Reason == fault.ReasonPoolSaturated || fe.Reason == fault.ReasonRateLimited)
}

// denied reports a refusal for the principal: the fallback is skipped.
func denied(err error) bool {
	return errors.Is(err, fault.ErrForbidden) || errors.Is(err, fault.ErrUnauthorized)
}

// retryableError is a failure a plan step's retry policy may retry
// (plan's retryable asks Retryable); it unwraps to its *fault.Error.
type retryableError struct{ fe *fault.Error }

func (e retryableError) Error() string   { return e.fe.Error() }
func (e retryableError) Unwrap() error   { return e.fe }
func (e retryableError) Retryable() bool { return true }
