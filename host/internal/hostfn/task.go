package hostfn

import (
	"context"
	"encoding/json"
	"github.com/skillhost/skillhost/host/fault"
	"sync"
	"unicode/utf8"
)

// Caps of the task host functions.
const (
	MaxInterruptText    = 16 << 10 // bytes of the question a skill asks
	MaxInterruptData    = 64 << 10 // bytes of the optional data part with it
	MaxInterruptRequest = 96 << 10 // bytes of one task_interrupt request
	MaxHistoryRequest   = 1 << 10  // bytes of one task_history request
	MaxHistoryReply     = 1 << 20  // bytes of the messages one task_history returns
	maxHistoryMessages  = 1 << 12  // messages one task_history returns
)

// Interrupt states a skill may end its turn in (the v0.3 names).
const (
	InputRequired = "input-required"
	AuthRequired  = "auth-required"
)

// Message is one message of a task's history as a skill reads it: who sent
// it and its text parts (joined by newlines) and data part.
type Message struct {
	Role string          `json:"role"` // "user" or "agent"
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Interrupt is how a skill ended its turn: the state it asked for and the
// status message (its question).
type Interrupt struct {
	State string          `json:"state"` // InputRequired or AuthRequired
	Text  string          `json:"text"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// Task is the A2A task a call runs one turn of (Call.Task). The host fills
// ID, Turn and History before the call; the skill's task_interrupt is
// recorded in it and read with Interrupted once the call returned. Safe for
// concurrent use.
type Task struct {
	ID      string
	Turn    int       // 1 for the task's first turn
	History []Message // the task's messages, oldest first, the current one last

	mu  sync.Mutex
	ask *Interrupt
}

// Interrupted is what the skill asked for with task_interrupt (nil: it did
// not; the turn ends as the call does).
func (t *Task) Interrupted() *Interrupt {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ask
}

// Asked reports whether the skill ended its turn asking for something
// (task_interrupt): plugin.Call.Turn, whose output_schema is then not
// applied.
func (t *Task) Asked() bool { return t.Interrupted() != nil }

type interruptRequest struct {
	State string          `json:"state"`
	Text  string          `json:"text"`
	Data  json.RawMessage `json:"data"`
}

type interruptResult struct {
	TaskID string `json:"task_id"`
	State  string `json:"state"`
}

// taskInterrupt records that the call's turn ends in input-required or
// auth-required with the skill's question (the last call wins). The turn
// ends when the skill returns; its output is then ignored.
func (f *funcs) taskInterrupt(_ context.Context, call *Call, req []byte) (any, *guestError) {
	var r interruptRequest
	if gerr := decodeRequest(req, &r); gerr != nil {
		return nil, gerr
	}
	if call.Task == nil {
		return nil, errorf(fault.GuestNotATask, "this call is not an A2A task turn: only a skill run by A2A SendMessage can ask for input")
	}
	switch r.State {
	case "", "input_required", InputRequired:
		r.State = InputRequired
	case "auth_required", AuthRequired:
		r.State = AuthRequired
	default:
		return nil, errorf(fault.GuestBadState, "state must be %q or %q", InputRequired, AuthRequired)
	}
	if len(r.Text) > MaxInterruptText || !utf8.ValidString(r.Text) {
		return nil, errorf(fault.GuestRequestTooLarge, "text must be valid UTF-8 of at most %d bytes", MaxInterruptText)
	}
	if r.Text == "" {
		return nil, errorf(fault.GuestBadRequest, "text (the question the caller answers) is required")
	}
	if len(r.Data) > MaxInterruptData {
		return nil, errorf(fault.GuestRequestTooLarge, "data is %d bytes, the limit is %d", len(r.Data), MaxInterruptData)
	}
	if string(r.Data) == "null" {
		r.Data = nil
	}
	t := call.Task
	t.mu.Lock()
	t.ask = &Interrupt{State: r.State, Text: r.Text, Data: r.Data}
	t.mu.Unlock()
	return interruptResult{TaskID: t.ID, State: r.State}, nil
}

type historyRequest struct {
	Limit int `json:"limit"`
}

type historyResult struct {
	TaskID    string    `json:"task_id"`
	Turn      int       `json:"turn"`
	Messages  []Message `json:"messages"`
	Truncated bool      `json:"truncated"`
}

// taskHistory returns the newest messages of the call's task, oldest
// first, at most limit (default and cap 4096) and MaxHistoryReply bytes:
// older ones are left out and truncated says so.
func (f *funcs) taskHistory(_ context.Context, call *Call, req []byte) (any, *guestError) {
	var r historyRequest
	if len(req) > 0 {
		if gerr := decodeRequest(req, &r); gerr != nil {
			return nil, gerr
		}
	}
	if call.Task == nil {
		return nil, errorf(fault.GuestNotATask, "this call is not an A2A task turn: it has no history")
	}
	limit := r.Limit
	if limit <= 0 || limit > maxHistoryMessages {
		limit = maxHistoryMessages
	}
	h := call.Task.History
	res := historyResult{TaskID: call.Task.ID, Turn: call.Task.Turn, Messages: []Message{}}
	size, start := 0, len(h)
	for start > 0 && len(h)-start < limit {
		n := len(h[start-1].Text) + len(h[start-1].Data) + 64
		if size+n > MaxHistoryReply {
			break
		}
		size += n
		start--
	}
	res.Truncated = start > 0
	res.Messages = append(res.Messages, h[start:]...)
	return res, nil
}
