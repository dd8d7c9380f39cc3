package rpc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/agents"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/notify"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

type skillExecuteParams struct {
	SessionID   string          `json:"session_id"`
	SkillID     string          `json:"skill_id"`
	SkillParams json.RawMessage `json:"skill_params"`
	Timeout     *float64        `json:"timeout"` // milliseconds
}

// Accounting is the per-call accounting added to results beyond spec 001.
type Accounting struct {
	Plugin          string `json:"plugin"`
	PluginVersion   string `json:"plugin_version"`
	DurationMicros  int64  `json:"duration_us"`
	MemoryPeakBytes uint64 `json:"memory_peak_bytes"`
	Instance        string `json:"instance"` // "fresh" or "reused"
}

// skillExecuteResult is skill/execute's result, as encodeExecuteResult
// writes it.
type skillExecuteResult struct {
	SkillID         string     `json:"skill_id"`
	Status          string     `json:"status"`
	Output          any        `json:"output"`
	ExecutionTimeMS int64      `json:"execution_time_ms"`
	Accounting      Accounting `json:"accounting"`
}

// executeResult is skill/execute's result: the engine has it encode
// itself, once, into the response (jsonrpc.Appender, appendExecuteResult).
// One pointer: returning it as a result costs no allocation.
type executeResult struct{ out *plugin.Outcome }

var _ jsonrpc.Appender = executeResult{}

// AppendJSON appends the result's JSON to dst.
func (r executeResult) AppendJSON(dst []byte) []byte { return appendExecuteResult(dst, r.out) }

// SizeHint is about the length of the result's JSON.
func (r executeResult) SizeHint() int { return executeResultSize(r.out) }

// MarshalJSON encodes the result for the bindings that marshal it.
func (r executeResult) MarshalJSON() ([]byte, error) { return encodeExecuteResult(r.out), nil }

// Reached names the skill the call ran (the host's access line).
func (r executeResult) Reached() (plugin, skill string) { return r.out.Plugin, r.out.SkillID }

func (s *Service) skillExecute(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p skillExecuteParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if p.SkillID == "" {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "skill_id is required")
	}
	out, err := s.run(ctx, req, p.SessionID, p.SkillID, p.SkillParams, p.Timeout)
	if err != nil {
		return nil, err
	}
	return executeResult{out}, nil // skillExecuteResult, encoded once by the engine
}

type agentCallParams struct {
	SessionID     string          `json:"session_id"`
	TargetAgentID string          `json:"target_agent_id"`
	Method        string          `json:"method"`
	Params        json.RawMessage `json:"params"`
	Timeout       *float64        `json:"timeout"` // milliseconds
}

type agentCallResult struct {
	// AgentID is the agent that answered: the target, or one of its
	// fallbacks (then FallbackFrom is the target).
	AgentID         string      `json:"agent_id"`
	Method          string      `json:"method"`
	Result          any         `json:"result"`
	ExecutionTimeMS int64       `json:"execution_time_ms"`
	FallbackFrom    string      `json:"fallback_from,omitempty"`
	Accounting      *Accounting `json:"accounting,omitempty"` // a plugin of this host answered
	Remote          *RemoteInfo `json:"remote,omitempty"`     // a remote agent answered
}

// Reached names the skill the call ran when a plugin of this host answered
// (the host's access line).
func (r agentCallResult) Reached() (plugin, skill string) {
	if r.Accounting == nil {
		return "", ""
	}
	return r.Accounting.Plugin, r.Method
}

// RemoteInfo describes how a remote agent was reached (beyond spec 001).
type RemoteInfo struct {
	Binding  string `json:"binding"`  // the card interface's protocol binding, e.g. JSONRPC
	Version  string `json:"version"`  // its protocol version, e.g. 1.0
	Protocol string `json:"protocol"` // "cleveragents" (agent/call on a skillhost peer) or "a2a" (SendMessage)
	Attempts int    `json:"attempts"` // attempts made, the first included
}

func (s *Service) agentCall(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p agentCallParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if p.TargetAgentID == "" || p.Method == "" {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "target_agent_id and method are required")
	}
	if err := s.requireSession(ctx, p.SessionID); err != nil {
		return nil, err
	}
	timeout, err := callTimeout(p.Timeout)
	if err != nil {
		return nil, err
	}
	res, err := s.agents.Call(ctx, agents.Call{Target: p.TargetAgentID, Method: p.Method, Input: p.Params, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	out := agentCallResult{AgentID: res.AgentID, Method: res.Method, Result: OutputValue(res.Output),
		ExecutionTimeMS: res.Duration.Milliseconds(), FallbackFrom: res.FallbackFrom}
	if res.Local != nil {
		a := accounting(res.Local)
		out.Accounting = &a
	}
	if r := res.Remote; r != nil {
		proto := "a2a"
		if r.Interface.Extension {
			proto = "cleveragents"
		}
		out.Remote = &RemoteInfo{Binding: r.Interface.Binding, Version: r.Interface.Version, Protocol: proto, Attempts: r.Attempts}
	}
	return out, nil
}

// run checks the session, then executes skill in the sandbox with the
// caller's timeout in milliseconds (the skill's limit caps it).
func (s *Service) run(ctx context.Context, req *jsonrpc.Request, sessionID, skill string, input json.RawMessage, timeoutMS *float64) (*plugin.Outcome, error) {
	if err := s.requireSession(ctx, sessionID); err != nil {
		return nil, err
	}
	timeout, err := callTimeout(timeoutMS)
	if err != nil {
		return nil, err
	}
	// the session and request id travel in the call's invocation (the
	// envelope's session_id is the params' session_id)
	ctx = hostfn.WithCall(ctx, &hostfn.Call{Skill: skill})
	return s.skills.Execute(ctx, plugin.Call{SkillID: skill, Input: input, Timeout: timeout,
		InputJSON: true, // decoded from the params (Bind)
	})
}

// callTimeout converts a call's timeout in milliseconds (nil: none).
func callTimeout(timeoutMS *float64) (time.Duration, error) {
	if timeoutMS == nil {
		return 0, nil
	}
	// The skill's limit caps the timeout anyway; the bound only keeps the
	// conversion to a Duration from overflowing.
	if *timeoutMS <= 0 || *timeoutMS > maxTimeoutMS {
		return 0, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "timeout must be a positive number of milliseconds")
	}
	return time.Duration(*timeoutMS * float64(time.Millisecond)), nil
}

type agentNotifyParams struct {
	SessionID     string          `json:"session_id"`
	TargetAgentID string          `json:"target_agent_id"`
	Event         string          `json:"event"`
	Data          json.RawMessage `json:"data"`
}

// agentNotify accepts an event for an agent: the notifier records it on the
// event stream and hands it to the target plugin's events export (at most
// once per envelope request_id). Sent as a notification it has no response;
// with an id the result says whether the target took it.
func (s *Service) agentNotify(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p agentNotifyParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if p.Event == "" {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "event is required").With("field", "event")
	}
	if p.SessionID != "" {
		if err := s.requireSession(ctx, p.SessionID); err != nil {
			return nil, err
		}
	}
	if p.TargetAgentID != "" {
		if err := auth.From(ctx).AllowAgent(p.TargetAgentID); err != nil {
			return nil, err
		}
	}
	s.log.Info("agent event", "event", p.Event, "target_agent_id", p.TargetAgentID, "session_id", p.SessionID, "data_bytes", len(p.Data))
	if s.notifier == nil {
		return map[string]any{"status": "accepted", "event": p.Event}, nil
	}
	res, err := s.notifier.Notify(ctx, notify.Notification{
		ID: req.Meta.RequestID, Owner: auth.From(ctx).Owner(), SessionID: p.SessionID, Target: p.TargetAgentID, Event: p.Event, Data: p.Data,
	})
	if err != nil {
		return nil, err
	}
	return struct {
		*notify.Result
		Event string `json:"event"`
	}{res, p.Event}, nil
}

// OutputValue is a plugin's output as the JSON value it encodes when it is
// JSON, otherwise as a string; empty output is null.
func OutputValue(out []byte) any {
	if len(out) == 0 {
		return nil
	}
	if json.Valid(out) {
		return json.RawMessage(out)
	}
	return string(out)
}

func accounting(out *plugin.Outcome) Accounting {
	inst := "reused"
	if out.Fresh {
		inst = "fresh"
	}
	return Accounting{
		Plugin:          out.Plugin,
		PluginVersion:   out.Version,
		DurationMicros:  out.Duration.Microseconds(),
		MemoryPeakBytes: out.MemoryPeakBytes,
		Instance:        inst,
	}
}
