package sdk

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skillhost/skillhost/sdk/internal/wire"
)

// Multi-turn skills. Run by A2A SendMessage, a skill may end its turn
// asking the caller for something instead of finishing: it returns
// AskInput (the task becomes input-required) or NeedAuth (auth-required)
// as its error, and the status message's text is the question. The
// caller's follow-up message (with the task's id) runs the skill again,
// with the follow-up's parts as its input; Context.Task reads the task's
// messages so far, oldest first: the first message, each question the skill
// asked and each answer, the current one last.
//
//	func fill(ctx *sdk.Context, in Input) (Output, error) {
//		task, err := ctx.Task()
//		if err != nil {
//			return Output{}, err
//		}
//		if task.Turn == 1 {
//			return Output{}, sdk.AskInput("What is your name?")
//		}
//		return Output{Name: task.Messages[len(task.Messages)-1].Text}, nil
//	}
//
// Outside an A2A task (skill/execute, agent/call, plan steps, agent_call,
// which run one turn) both fail with CodeNotATask, and so does the call.

// Task states an Interrupt ends a turn in.
const (
	StateInputRequired = "input-required"
	StateAuthRequired  = "auth-required"
)

// Interrupt ends a skill's turn asking the caller for input or
// authorization: return it as the handler's error. It is not a failure;
// the handler's output is ignored.
type Interrupt struct {
	State string // StateInputRequired or StateAuthRequired
	Text  string // the question, the text of the task's status message
	Data  any    // optional: a data part sent with the question (JSON-encodable)
}

// AskInput ends the turn in input-required with text as the question.
func AskInput(text string) *Interrupt { return &Interrupt{State: StateInputRequired, Text: text} }

// NeedAuth ends the turn in auth-required with text saying what is needed.
func NeedAuth(text string) *Interrupt { return &Interrupt{State: StateAuthRequired, Text: text} }

// WithData returns a copy of i carrying data as a data part of the question.
func (i *Interrupt) WithData(data any) *Interrupt {
	c := *i
	c.Data = data
	return &c
}

// Error implements error (an Interrupt travels as the handler's error).
func (i *Interrupt) Error() string { return i.State + ": " + i.Text }

// Message is one message of a task's history.
type Message struct {
	Role string          // "user" (the caller) or "agent" (the skill's questions)
	Text string          // its text parts, joined by newlines
	Data json.RawMessage // its data part, if any
}

// Decode decodes the message's data part into v; a message without one
// fails with CodeInvalidInput.
func (m Message) Decode(v any) error {
	if len(m.Data) == 0 {
		return InvalidInput("the %s message has no data part", m.Role)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		return InvalidInput("the %s message's data does not decode: %v", m.Role, err)
	}
	return nil
}

// Task is the A2A task a call runs a turn of.
type Task struct {
	ID        string
	Turn      int       // 1 for the first turn, 2 for the first follow-up, …
	Messages  []Message // oldest first; the message of this turn last
	Truncated bool      // older messages were left out (the host caps the reply at 1 MiB)
}

// Task reads the task this call runs a turn of, with its history.
func (c *Context) Task() (*Task, error) {
	req, _ := json.Marshal(wire.TaskHistoryRequest{})
	var res wire.TaskHistoryResult
	if err := decodeReply(wire.FnTaskHistory, c.t.Call(wire.FnTaskHistory, req), &res); err != nil {
		return nil, err
	}
	t := &Task{ID: res.TaskID, Turn: res.Turn, Truncated: res.Truncated, Messages: make([]Message, 0, len(res.Messages))}
	for _, m := range res.Messages {
		t.Messages = append(t.Messages, Message(m))
	}
	return t, nil
}

// interrupt tells the host that the turn ends as i asks.
func interrupt(t Transport, i *Interrupt) error {
	r := wire.TaskInterruptRequest{State: i.State, Text: i.Text}
	if i.Data != nil {
		raw, err := json.Marshal(i.Data)
		if err != nil {
			return Errorf(CodeInvalidInput, "interrupt data does not encode: %v", err)
		}
		r.Data = raw
	}
	req, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sdk: encode interrupt: %w", err)
	}
	return decodeReply(wire.FnTaskInterrupt, t.Call(wire.FnTaskInterrupt, req), nil)
}

// asInterrupt returns the *Interrupt in err's chain, if any.
func asInterrupt(err error) (*Interrupt, bool) {
	var i *Interrupt
	return i, errors.As(err, &i) && i != nil
}
