package hostfn

import (
	"context"
	"encoding/json"
	"regexp"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// Caps of the agent_call host function.
const (
	// MaxAgentCallRequest bounds one request block: 1 MiB of params plus
	// the agent, method and framing.
	MaxAgentCallRequest = 1<<20 + 4<<10
	// MaxAgentCallMethod bounds the method (skill id).
	MaxAgentCallMethod = 256
)

// AgentCaller makes the calls of agent_call: to a plugin of this host or a
// remote peer, as the principal and within the deadline of ctx. The host's
// agent router implements it; Deps.Agents nil answers "unavailable".
type AgentCaller interface {
	CallAgent(ctx context.Context, call AgentCall) (*AgentResult, error)
}

// AgentCall is one nested call.
type AgentCall struct {
	Target string          // agent id: a plugin name or a remote peer id
	Method string          // skill id
	Input  json.RawMessage // JSON input
	// Timeout caps the call; 0: what is left of the calling call's
	// deadline (which always caps it).
	Timeout              time.Duration
	SessionID, RequestID string // of the calling call, for attribution and the callee's session
	Caller               string // the calling plugin
	// Provenance asks for a remote answer's peer result (AgentResult.Peer);
	// a peer that signs its tasks is then called over A2A SendMessage.
	Provenance bool
}

// AgentResult is a nested call's answer.
type AgentResult struct {
	AgentID string // the agent that answered (a fallback's id when the primary failed)
	// FallbackFrom is the agent called when a fallback answered, else "".
	FallbackFrom string
	Method       string
	Output       []byte
	Duration     time.Duration
	// Peer is a remote answer's peer result (its task, state, chain head
	// and output digest), when the call asked for provenance.
	Peer *provenance.PeerResult
}

// agentCallRequest is the request of agent_call.
type agentCallRequest struct {
	Agent     string          `json:"agent"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params,omitempty"`
	TimeoutMs int64           `json:"timeout_ms,omitempty"`
}

// agentCallResult is the result of agent_call, shaped like agent/call's.
type agentCallResult struct {
	AgentID         string          `json:"agent_id"`
	Method          string          `json:"method"`
	Result          json.RawMessage `json:"result"`
	ExecutionTimeMS int64           `json:"execution_time_ms"`
	FallbackFrom    string          `json:"fallback_from,omitempty"`
}

// agentID is the grammar of agent ids.
var agentID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// maxAgentTimeout bounds timeout_ms (a day): the calling call's own
// deadline is far shorter anyway.
const maxAgentTimeout = 24 * time.Hour

// agentCall calls another agent as the calling call's principal. The
// manifest must list the agent (permissions.agents); the router applies the
// principal's scopes, the depth limit and the deadline.
func (f *funcs) agentCall(ctx context.Context, call *Call, raw []byte) (any, *guestError) {
	var r agentCallRequest
	if gerr := decodeRequest(raw, &r); gerr != nil {
		return nil, gerr
	}
	timeout := time.Duration(r.TimeoutMs) * time.Millisecond
	switch {
	case !agentID.MatchString(r.Agent):
		return nil, errorf(fault.GuestBadRequest, "agent %q is not an agent id ([a-z0-9][a-z0-9-]*)", truncate(r.Agent, 80))
	case r.Method == "" || len(r.Method) > MaxAgentCallMethod:
		return nil, errorf(fault.GuestBadRequest, "method must be 1..%d bytes", MaxAgentCallMethod)
	case r.TimeoutMs < 0 || r.TimeoutMs > maxAgentTimeout.Milliseconds():
		return nil, errorf(fault.GuestBadRequest, "timeout_ms %d: want 0 (the rest of this call's time) up to %d", r.TimeoutMs, maxAgentTimeout.Milliseconds())
	case len(r.Params) > 0 && !json.Valid(r.Params):
		return nil, errorf(fault.GuestBadRequest, "params is not JSON")
	case !f.agentPermitted(r.Agent):
		return nil, errorf(fault.GuestAgentNotAllowed, "agent %q is not in this plugin's permissions.agents", r.Agent)
	case f.deps.Agents == nil:
		return nil, errorf(fault.GuestUnavailable, "this host makes no agent calls")
	}
	// The called agent shares the caller's session (an A2A task's context
	// session too), so its context functions work and a remote peer keeps
	// one peer session per calling session.
	if gerr := f.resolveSession(ctx, call); gerr != nil {
		return nil, gerr
	}
	res, err := f.deps.Agents.CallAgent(ctx, AgentCall{
		Target: r.Agent, Method: r.Method, Input: r.Params, Timeout: timeout,
		SessionID: call.sessionID(ctx), RequestID: auth.InvocationFrom(ctx).RequestID, Caller: f.grant.Plugin,
		Provenance: call.Delegations != nil,
	})
	if err != nil {
		return nil, agentError(err)
	}
	if call.Delegations != nil && res.Peer != nil {
		call.Delegations.add(res.Peer)
	}
	return agentCallResult{AgentID: res.AgentID, Method: res.Method, Result: jsonValue(res.Output),
		ExecutionTimeMS: res.Duration.Milliseconds(), FallbackFrom: res.FallbackFrom}, nil
}

// agentPermitted reports whether permissions.agents lists id.
func (f *funcs) agentPermitted(id string) bool {
	for _, p := range f.grant.Agents {
		if auth.Match(p, id) {
			return true
		}
	}
	return false
}

// agentError is a failed nested call as the guest sees it: the code is the
// failure's reason (docs/reference/errors.md), except that an error the called
// plugin returned keeps that plugin's own code, so a plugin passing an
// agent's error on passes on the original code. The data says what it was.
func agentError(err error) *guestError {
	fe := fault.From(err)
	code := fe.WireReason()
	data := map[string]any{"reason": code, "rpc_code": fe.Kind.Code()}
	if id, ok := fe.Data["agent_id"].(string); ok {
		data["agent_id"] = id
	}
	if pc, ok := fe.Data["plugin_code"].(string); ok && pc != "" && fe.Reason == fault.ReasonPluginError {
		code = pc
		if pd, ok := fe.Data["plugin_data"]; ok {
			data["plugin_data"] = pd
		}
	}
	return &guestError{Code: code, Message: fe.Message(), Data: data}
}

// jsonValue is output as a JSON value: itself when it is JSON, else a JSON
// string; null when empty.
func jsonValue(out []byte) json.RawMessage {
	switch {
	case len(out) == 0:
		return json.RawMessage("null")
	case json.Valid(out):
		return out
	}
	b, _ := json.Marshal(string(out)) // strings always encode
	return b
}
