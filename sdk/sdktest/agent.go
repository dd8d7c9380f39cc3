package sdktest

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/internal/wire"
)

// AgentCalls returns the calls that reached Agents (those refused by
// AllowedAgents or as malformed are not included).
func (h *Host) AgentCalls() []sdk.AgentCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sdk.AgentCall(nil), h.calls...)
}

// Answer returns an Agents func answering every call with result (any
// JSON-encodable value) from the agent called.
func Answer(result any) func(sdk.AgentCall) (*sdk.AgentResult, error) {
	return func(c sdk.AgentCall) (*sdk.AgentResult, error) {
		raw, err := json.Marshal(result)
		if err != nil {
			return nil, err
		}
		return &sdk.AgentResult{AgentID: c.Agent, Method: c.Method, Result: raw}, nil
	}
}

func (h *Host) agentCall(req []byte) (any, *wire.ReplyError) {
	var r wire.AgentCallRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	switch {
	case r.Agent == "" || r.Method == "":
		return nil, fail(sdk.CodeBadRequest, "agent and method are required")
	case r.TimeoutMs < 0:
		return nil, fail(sdk.CodeBadRequest, "timeout_ms %d: must not be negative", r.TimeoutMs)
	case len(r.Params) > 0 && !json.Valid(r.Params):
		return nil, fail(sdk.CodeBadRequest, "params is not JSON")
	}
	h.mu.Lock()
	allowed := h.AllowedAgents == nil
	for _, p := range h.AllowedAgents {
		allowed = allowed || glob(p, r.Agent)
	}
	if !allowed {
		h.mu.Unlock()
		return nil, fail(sdk.CodeAgentNotAllowed, "agent %q is not in permissions.agents", r.Agent)
	}
	call := sdk.AgentCall{Agent: r.Agent, Method: r.Method, Timeout: time.Duration(r.TimeoutMs) * time.Millisecond}
	if len(r.Params) > 0 {
		call.Params = json.RawMessage(r.Params)
	}
	h.calls = append(h.calls, call)
	answer := h.Agents
	h.mu.Unlock()
	if answer == nil {
		return nil, fail(sdk.CodeUnknownAgent, "sdktest: no Agents set for %s/%s", r.Agent, r.Method)
	}
	res, err := answer(call)
	var se *sdk.Error
	switch {
	case errors.As(err, &se):
		return nil, &wire.ReplyError{Code: se.Code, Message: se.Message, Data: se.Data}
	case err != nil:
		return nil, fail(sdk.CodeInternal, "%v", err)
	case res == nil:
		return nil, fail(sdk.CodeInternal, "sdktest: Agents returned no result")
	}
	out := wire.AgentCallResult{AgentID: res.AgentID, FallbackFrom: res.FallbackFrom, Method: res.Method, Result: res.Result, ExecutionTimeMS: res.Duration.Milliseconds()}
	if out.AgentID == "" {
		out.AgentID = r.Agent
	}
	if out.Method == "" {
		out.Method = r.Method
	}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	return out, nil
}

// glob matches name against an agent pattern whose "*" matches any run of
// characters, as the host does.
func glob(pattern, name string) bool {
	p, n, star, mark := 0, 0, -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p, mark = star+1, mark+1
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
