package fault

import (
	"context"
	"errors"
	"fmt"
)

// Error is the one error type of skillhost. It is safe to wrap with %w and to
// match with errors.Is against the Err* sentinels (kind equality) or with
// errors.As to read its fields.
type Error struct {
	Kind   Kind
	Reason string         // machine-readable, see the Reason* constants
	Msg    string         // human-readable detail; "" uses the kind's message
	Data   map[string]any // extra error data merged into the wire `data`
	Err    error          // cause, if any
}

// New returns an error of kind k with a reason and a message.
func New(k Kind, reason, msg string) *Error {
	return &Error{Kind: k, Reason: reason, Msg: msg}
}

// Newf is New with a formatted message. %w in format records the cause.
func Newf(k Kind, reason, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: k, Reason: reason, Msg: err.Error(), Err: errors.Unwrap(err)}
}

// Wrap returns an error of kind k whose cause is err.
func Wrap(k Kind, reason string, err error, msg string) *Error {
	if msg == "" && err != nil {
		msg = err.Error()
	}
	return &Error{Kind: k, Reason: reason, Msg: msg, Err: err}
}

// With returns a copy of e with key=value added to its data.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Data = make(map[string]any, len(e.Data)+1)
	for k, v := range e.Data {
		c.Data[k] = v
	}
	c.Data[key] = value
	return &c
}

// Error implements error: "<message>: <detail>".
func (e *Error) Error() string {
	if e.Msg == "" {
		return e.Kind.Message()
	}
	return e.Kind.Message() + ": " + e.Msg
}

// Message is the detail shown to clients (the kind's message when empty).
func (e *Error) Message() string {
	if e.Msg == "" {
		return e.Kind.Message()
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches any *Error of the same kind whose reason is empty or equal, so
// errors.Is(err, fault.ErrTimeout) works for every timeout.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Kind == e.Kind && (t.Reason == "" || t.Reason == e.Reason)
}

// Sentinels for errors.Is; they match any error of their kind.
var (
	ErrInvalidParams     = &Error{Kind: InvalidParams}
	ErrCanceled          = &Error{Kind: Canceled}
	ErrSessionNotFound   = &Error{Kind: SessionNotFound}
	ErrPlanNotFound      = &Error{Kind: PlanNotFound}
	ErrAgentNotFound     = &Error{Kind: AgentNotFound}
	ErrSkillFailed       = &Error{Kind: SkillFailed}
	ErrTimeout           = &Error{Kind: Timeout}
	ErrUnauthorized      = &Error{Kind: Unauthorized}
	ErrForbidden         = &Error{Kind: Forbidden}
	ErrResourceExhausted = &Error{Kind: ResourceExhausted}
	ErrInvalidState      = &Error{Kind: InvalidState}
	ErrTaskNotFound      = &Error{Kind: TaskNotFound}
)

// From classifies any error as a *Error: an *Error in the chain is returned
// as is; context.DeadlineExceeded becomes Timeout, context.Canceled becomes
// Canceled; anything else is Internal (its text kept as the message).
// From(nil) is nil.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Wrap(Timeout, ReasonTimeout, err, "deadline exceeded")
	case errors.Is(err, context.Canceled):
		return Wrap(Canceled, ReasonCanceled, err, "canceled by the caller")
	}
	return Wrap(Internal, ReasonInternal, err, "")
}

// KindOf is From(err).Kind; Internal for nil.
func KindOf(err error) Kind {
	if fe := From(err); fe != nil {
		return fe.Kind
	}
	return Internal
}
