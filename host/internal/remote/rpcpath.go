package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
)

// Methods of skillhost's extension called on a peer.
const (
	methodAgentCall     = "_cleveragents/agent/call"
	methodSkillExecute  = "_cleveragents/skill/execute"
	methodSessionCreate = "_cleveragents/session/create"
	methodSessionClose  = "_cleveragents/session/close"
)

// rpcRequest is a JSON-RPC 2.0 request.
type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
	ID      string `json:"id"`
}

// rpcResponse is a JSON-RPC 2.0 response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// header is one credential or depth header of a request.
type header struct{ name, value string }

// requestHeaders are the headers every request to the peer carries: its
// credentials (as the card or credentials.header says) and the call depth.
func (p *peer) requestHeaders(card *a2av1.AgentCard, depth int) []header {
	h := []header{{DepthHeader, strconv.Itoa(depth)}}
	if p.cfg.key == "" {
		return h
	}
	name := p.cfg.Credentials.Header
	if name == "" {
		name = cardKeyHeader(card)
	}
	if strings.EqualFold(name, "Authorization") {
		return append(h, header{"Authorization", "Bearer " + p.cfg.key})
	}
	return append(h, header{name, p.cfg.key})
}

// cardKeyHeader is the header an apiKey scheme of the card names (the
// first by scheme name), else Authorization (bearer).
func cardKeyHeader(card *a2av1.AgentCard) string {
	if card == nil {
		return "Authorization"
	}
	names := make([]string, 0, len(card.SecuritySchemes))
	for n := range card.SecuritySchemes {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		s, ok := card.SecuritySchemes[a2av1.SecuritySchemeName(n)].(a2av1.APIKeySecurityScheme)
		if ok && s.Location == a2av1.APIKeySecuritySchemeLocationHeader && headerToken(s.Name) {
			return s.Name
		}
	}
	return "Authorization"
}

// headerToken reports whether s is a plausible header name from a card.
func headerToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// rpc sends one JSON-RPC request to url and returns its result. Failures
// are *failure values (a peer's error response is classified by peerError).
func (p *peer) rpc(ctx context.Context, url, method string, params any, headers []header) (json.RawMessage, error) {
	id := p.cfg.ID
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", Method: method, Params: params, ID: "sh_" + rand.Text()})
	if err != nil {
		return nil, fail(final, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "remote agent %q: params do not encode: %v", id, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fail(unusable, unavailable(id, "interface URL: %v", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for _, h := range headers {
		req.Header.Set(h.name, h.value)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, transportFailure(id, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, transportFailure(id, err)
	}
	if f := responseFailure(id, resp.StatusCode, raw); f != nil {
		return nil, f
	}
	var r rpcResponse
	if json.Unmarshal(raw, &r) != nil || r.JSONRPC != "2.0" || len(r.Result) == 0 {
		return nil, invalidAnswer(id, "%s answered with no JSON-RPC 2.0 result", method)
	}
	return r.Result, nil
}

// agentCallAnswer is the result of _cleveragents/agent/call.
type agentCallAnswer struct {
	AgentID         string          `json:"agent_id"`
	Method          string          `json:"method"`
	Result          json.RawMessage `json:"result"`
	ExecutionTimeMS int64           `json:"execution_time_ms"`
}

// skillExecuteAnswer is the result of _cleveragents/skill/execute.
type skillExecuteAnswer struct {
	SkillID string          `json:"skill_id"`
	Status  string          `json:"status"`
	Output  json.RawMessage `json:"output"`
}

// callExtension forwards c in this host's session on the peer for c's
// session (created on first use; created anew, once, when the peer no
// longer knows it): as _cleveragents/skill/execute (the peer as a whole,
// method = one of its skills), or as _cleveragents/agent/call to the
// plugin named by the peer's agent key.
func (p *peer) callExtension(ctx context.Context, url string, headers []header, c Call) (*answer, error) {
	method := methodSkillExecute
	params := map[string]any{"skill_id": c.Method, "skill_params": inputOrEmpty(c.Input)}
	if p.cfg.Agent != "" {
		method = methodAgentCall
		params = map[string]any{"target_agent_id": p.cfg.Agent, "method": c.Method, "params": inputOrEmpty(c.Input)}
	}
	if ms := remainingMS(ctx); ms > 0 {
		params["timeout"] = ms
	}
	for try := 0; ; try++ {
		sid, err := p.sessions.get(ctx, c.SessionID, func(ctx context.Context) (string, error) {
			// Shared by concurrent first uses, so not bound to one caller's
			// context (its cancel would fail every waiter's attempt).
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.AttemptTimeout)
			defer cancel()
			return p.createSession(sctx, url, headers)
		})
		if err != nil {
			return nil, err
		}
		params["session_id"] = sid
		raw, err := p.rpc(ctx, url, method, params, headers)
		if err != nil {
			if try == 0 && errors.Is(err, fault.ErrSessionNotFound) {
				p.sessions.forget(c.SessionID, sid) // closed or expired on the peer: make another
				continue
			}
			return nil, err
		}
		return p.extensionAnswer(method, raw)
	}
}

// extensionAnswer reads the result of skill/execute or agent/call.
func (p *peer) extensionAnswer(method string, raw json.RawMessage) (*answer, error) {
	if method == methodSkillExecute {
		var a skillExecuteAnswer
		if err := json.Unmarshal(raw, &a); err != nil || len(a.Output) == 0 {
			return nil, invalidAnswer(p.cfg.ID, "skill/execute result is not {skill_id, status, output}")
		}
		return &answer{output: a.Output, raw: raw}, nil
	}
	var a agentCallAnswer
	if err := json.Unmarshal(raw, &a); err != nil || len(a.Result) == 0 {
		return nil, invalidAnswer(p.cfg.ID, "agent/call result is not {agent_id, method, result}")
	}
	return &answer{output: a.Result, raw: raw}, nil
}

// createSession opens a session on the peer for this host's calls.
func (p *peer) createSession(ctx context.Context, url string, headers []header) (string, error) {
	raw, err := p.rpc(ctx, url, methodSessionCreate, map[string]any{}, headers)
	if err != nil {
		return "", err
	}
	var s struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.SessionID == "" {
		return "", invalidAnswer(p.cfg.ID, "session/create result has no session_id")
	}
	return s.SessionID, nil
}

// inputOrEmpty is the call's input, {} when empty.
func inputOrEmpty(in json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(in)) == 0 {
		return json.RawMessage("{}")
	}
	return in
}
