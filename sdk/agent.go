package sdk

import (
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/sdk/internal/wire"
)

// AgentCall is a call to another agent through the host (agent_call).
type AgentCall struct {
	// Agent is a plugin of this host (its name) or a remote agent of the
	// host's agents.remote (its id). The manifest's permissions.agents
	// must list it.
	Agent string
	// Method is the skill to call.
	Method string
	// Params is the skill's input: any JSON-encodable value, or a
	// json.RawMessage; nil sends {}.
	Params any
	// Timeout caps the call; 0 uses what is left of this call's time,
	// which caps it anyway.
	Timeout time.Duration
}

// AgentResult is another agent's answer.
type AgentResult struct {
	// AgentID is the agent that answered: Agent, or one of its fallbacks
	// when a remote agent failed and the host tried them.
	AgentID string
	// FallbackFrom is the agent called (Agent) when one of its fallbacks
	// answered, else "".
	FallbackFrom string
	Method       string
	// Result is the skill's output as JSON (a string for output that is
	// not JSON, null for none).
	Result   json.RawMessage
	Duration time.Duration
}

// Decode decodes Result into v.
func (r *AgentResult) Decode(v any) error { return json.Unmarshal(r.Result, v) }

// CallAgent calls another agent — a skill of a plugin on this host, or of a
// remote agent — as the original caller of this skill (its key's scopes
// apply), within this call's deadline. Each nested call is one hop of a
// chain the host caps (agents.max_call_depth, across hosts).
//
// A failure is an *Error whose Code is CodeAgentNotAllowed, CodeBadRequest
// or CodeUnavailable when the host did not make the call, otherwise the
// failure's reason: CodeTimeout, CodeCallDepth, CodeCircuitOpen,
// CodePeerUnavailable, CodeUnknownAgent, CodeScopeDenied, "schema",
// "unknown_skill", "trap", … When the called skill itself returned an
// error, Code is that skill's own code, so passing the error on passes the
// original code on. Data holds "reason" (the host's reason, "plugin_error"
// for a skill's own error), "rpc_code" (the JSON-RPC code), "agent_id"
// and, for a skill's own error, its "plugin_data".
func (c *Context) CallAgent(call AgentCall) (*AgentResult, error) {
	req := wire.AgentCallRequest{Agent: call.Agent, Method: call.Method}
	switch p := call.Params.(type) {
	case nil:
	case json.RawMessage:
		req.Params = p
	default:
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, InvalidInput("params for %s/%s do not encode: %v", call.Agent, call.Method, err)
		}
		req.Params = raw
	}
	if call.Timeout < 0 {
		return nil, InvalidInput("negative timeout %v", call.Timeout)
	}
	req.TimeoutMs = int64(call.Timeout / time.Millisecond)
	if call.Timeout%time.Millisecond != 0 {
		req.TimeoutMs++
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, InvalidInput("agent call does not encode: %v", err)
	}
	var res wire.AgentCallResult
	if err := decodeReply(wire.FnAgentCall, c.t.Call(wire.FnAgentCall, raw), &res); err != nil {
		return nil, err
	}
	return &AgentResult{AgentID: res.AgentID, FallbackFrom: res.FallbackFrom, Method: res.Method, Result: res.Result,
		Duration: time.Duration(res.ExecutionTimeMS) * time.Millisecond}, nil
}
