package sdktest

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/internal/wire"
)

// Caps the fake applies, as the host does by default.
const (
	MaxKeyBytes   = 256     // context key length
	MaxValueBytes = 1 << 20 // context value size (the host's store.max_value default)
	MaxTTL        = 30 * 24 * time.Hour
)

// Host is a fake skillhost host. Create it with New, set its fields, then
// hand h.Context() to the handler under test.
type Host struct {
	// Config is the plugin's permissions.config.
	Config map[string]string
	// NoSession makes the call sessionless: Get and Set fail with
	// sdk.CodeNoSession, as they do for a call made without a session.
	NoSession bool
	// AllowedHosts is the manifest's permissions.allowed_hosts (exact host
	// or "*.suffix", optionally with ":port"; without one, ports 80 and 443):
	// fetching any other host fails with sdk.CodeHostNotAllowed before Fetch
	// is asked. Nil allows every host and port.
	AllowedHosts []string
	// Fetch answers http_fetch. Return an *sdk.Error to fail with its code
	// (e.g. sdk.CodeTimeout); any other error fails with
	// sdk.CodeFetchFailed. Nil fails every fetch with sdk.CodeFetchFailed.
	Fetch func(req sdk.Request) (*sdk.Response, error)
	// AllowedAgents is the manifest's permissions.agents (agent ids with
	// "*" wildcards): calling any other agent fails with
	// sdk.CodeAgentNotAllowed before Agents is asked. Nil allows every
	// agent.
	AllowedAgents []string
	// Agents answers agent_call (Context.CallAgent); the call's Params
	// arrive as a json.RawMessage. Return an *sdk.Error to fail with its
	// code and data (e.g. sdk.CodeCallDepth); any other error fails with
	// sdk.CodeInternal. A result without AgentID gets the called agent's.
	// Nil fails every call with sdk.CodeUnknownAgent.
	Agents func(call sdk.AgentCall) (*sdk.AgentResult, error)
	// Now is the clock of context TTLs. Default: time.Now.
	Now func() time.Time
	// Task is the A2A task the call runs a turn of, what Context.Task
	// returns. Nil: the call is not a task turn (Context.Task fails with
	// sdk.CodeNotATask). A handler's sdk.AskInput or sdk.NeedAuth comes
	// back as its error: check it with errors.As(err, new(*sdk.Interrupt)).
	Task *sdk.Task

	mu       sync.Mutex
	logs     []Log
	progress []Progress
	values   map[string]entry
	fetches  []sdk.Request
	calls    []sdk.AgentCall
}

// Log is one line the handler logged.
type Log struct {
	Level   sdk.Level
	Message string
}

// Progress is one progress report.
type Progress struct {
	Percent float64 // clamped to [0, 100] as the host does
	Message string
	Data    json.RawMessage
}

type entry struct {
	value   json.RawMessage
	expires time.Time // zero: never
}

// New returns a fake host with an empty config and an empty session
// context.
func New() *Host {
	return &Host{Config: map[string]string{}, values: map[string]entry{}}
}

// Context returns a Context over h, as a handler gets it in a plugin.
func (h *Host) Context() *sdk.Context { return sdk.NewContext(transport{h}) }

// Logs returns the lines logged so far.
func (h *Host) Logs() []Log {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Log(nil), h.logs...)
}

// Progress returns the progress reports so far.
func (h *Host) Progress() []Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Progress(nil), h.progress...)
}

// Fetches returns the requests that reached Fetch (those refused for their
// host or method are not included).
func (h *Host) Fetches() []sdk.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sdk.Request(nil), h.fetches...)
}

// SetValue stores v (JSON-encoded) in the session context, as an earlier
// call might have; ttl 0 keeps it.
func (h *Host) SetValue(key string, v any, ttl time.Duration) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.values[key] = entry{value: raw, expires: h.expiry(ttl)}
	return nil
}

// Value reads key from the session context into v; false when absent or
// expired.
func (h *Host) Value(key string, v any) (bool, error) {
	h.mu.Lock()
	e, ok := h.live(key)
	h.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(e.value, v)
}

// Respond returns a Fetch answering every request with status, a
// Content-Type and body.
func Respond(status int, contentType, body string) func(sdk.Request) (*sdk.Response, error) {
	return func(sdk.Request) (*sdk.Response, error) {
		return &sdk.Response{Status: status, Headers: map[string]string{"Content-Type": contentType}, Body: []byte(body)}, nil
	}
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Host) expiry(ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return h.now().Add(ttl)
}

// live returns key's entry unless absent or expired; h.mu is held.
func (h *Host) live(key string) (entry, bool) {
	e, ok := h.values[key]
	if !ok || (!e.expires.IsZero() && !h.now().Before(e.expires)) {
		return entry{}, false
	}
	return e, true
}

// transport answers the SDK's host calls with h.
type transport struct{ h *Host }

func (t transport) Config(key string) (string, bool) {
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	v, ok := t.h.Config[key]
	return v, ok
}

func (t transport) Call(fn string, req []byte) []byte {
	var (
		result any
		err    *wire.ReplyError
	)
	switch fn {
	case wire.FnLog:
		result, err = t.h.log(req)
	case wire.FnProgress:
		result, err = t.h.report(req)
	case wire.FnContextGet:
		result, err = t.h.contextGet(req)
	case wire.FnContextSet:
		result, err = t.h.contextSet(req)
	case wire.FnHTTPFetch:
		result, err = t.h.fetch(req)
	case wire.FnAgentCall:
		result, err = t.h.agentCall(req)
	case wire.FnTaskHistory:
		result, err = t.h.taskHistory()
	default:
		err = fail(sdk.CodeBadRequest, "no host function %q", fn)
	}
	reply, _ := json.Marshal(wire.Reply{OK: err == nil, Result: result, Error: err}) // results always encode
	return reply
}

func fail(code, format string, args ...any) *wire.ReplyError {
	return &wire.ReplyError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func decode(req []byte, v any) *wire.ReplyError {
	if err := json.Unmarshal(req, v); err != nil {
		return fail(sdk.CodeBadRequest, "request: %v", err)
	}
	return nil
}

func (h *Host) log(req []byte) (any, *wire.ReplyError) {
	var r wire.LogRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	levels := map[string]sdk.Level{"debug": sdk.LevelDebug, "info": sdk.LevelInfo, "": sdk.LevelInfo, "warn": sdk.LevelWarn, "error": sdk.LevelError}
	level, ok := levels[strings.ToLower(r.Level)]
	if !ok {
		return nil, fail(sdk.CodeBadRequest, "level %q: want debug, info, warn or error", r.Level)
	}
	h.mu.Lock()
	h.logs = append(h.logs, Log{Level: level, Message: r.Message})
	h.mu.Unlock()
	return struct{}{}, nil
}

func (h *Host) report(req []byte) (any, *wire.ReplyError) {
	var r wire.ProgressRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.progress = append(h.progress, Progress{Percent: math.Max(0, math.Min(100, r.Percent)), Message: r.Message, Data: r.Data})
	h.mu.Unlock()
	return map[string]bool{"delivered": true}, nil
}

func (h *Host) contextGet(req []byte) (any, *wire.ReplyError) {
	var r wire.ContextGetRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	if err := h.checkKey(r.Key); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.live(r.Key)
	if !ok {
		return wire.ContextGetResult{Found: false}, nil
	}
	return wire.ContextGetResult{Found: true, Value: e.value}, nil
}

func (h *Host) contextSet(req []byte) (any, *wire.ReplyError) {
	var r wire.ContextSetRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	if err := h.checkKey(r.Key); err != nil {
		return nil, err
	}
	ttl := time.Duration(r.TTLMs) * time.Millisecond
	switch {
	case len(r.Value) == 0:
		return nil, fail(sdk.CodeBadRequest, "value is required")
	case len(r.Value) > MaxValueBytes:
		return nil, fail(sdk.CodeValueTooLarge, "value is %d bytes, over the %d-byte cap", len(r.Value), MaxValueBytes)
	case r.TTLMs < 0 || ttl > MaxTTL:
		return nil, fail(sdk.CodeBadRequest, "ttl_ms %d: want 0 (no expiry) up to %d", r.TTLMs, MaxTTL.Milliseconds())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.values[r.Key] = entry{value: append(json.RawMessage(nil), r.Value...), expires: h.expiry(ttl)}
	return map[string]bool{"found": true}, nil
}

// checkKey applies the host's session and key rules.
func (h *Host) checkKey(key string) *wire.ReplyError {
	switch {
	case h.NoSession:
		return fail(sdk.CodeNoSession, "this call has no session")
	case key == "" || len(key) > MaxKeyBytes:
		return fail(sdk.CodeBadRequest, "key must be 1..%d bytes", MaxKeyBytes)
	}
	return nil
}

// taskHistory answers task_history from h.Task.
func (h *Host) taskHistory() (any, *wire.ReplyError) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Task == nil {
		return nil, fail(sdk.CodeNotATask, "this call is not an A2A task turn: it has no history")
	}
	res := wire.TaskHistoryResult{TaskID: h.Task.ID, Turn: h.Task.Turn, Truncated: h.Task.Truncated, Messages: []wire.TaskMessage{}}
	for _, m := range h.Task.Messages {
		res.Messages = append(res.Messages, wire.TaskMessage(m))
	}
	return res, nil
}
