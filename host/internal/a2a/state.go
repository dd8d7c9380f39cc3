package a2a

import (
	"strings"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
)

// TaskState is an A2A v1.0 task state; its value is the v1.0 wire name.
type TaskState string

// The nine A2A v1.0 task states.
const (
	StateUnspecified   TaskState = "TASK_STATE_UNSPECIFIED"
	StateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	StateWorking       TaskState = "TASK_STATE_WORKING"
	StateCompleted     TaskState = "TASK_STATE_COMPLETED"
	StateFailed        TaskState = "TASK_STATE_FAILED"
	StateCanceled      TaskState = "TASK_STATE_CANCELED"
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      TaskState = "TASK_STATE_REJECTED"
	StateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// AllStates lists the nine states in the order of the A2A specification.
func AllStates() []TaskState {
	return []TaskState{StateUnspecified, StateSubmitted, StateWorking, StateCompleted, StateFailed,
		StateCanceled, StateInputRequired, StateRejected, StateAuthRequired}
}

// IsTerminal reports whether s is completed, failed, canceled or rejected:
// a task in a terminal state never changes again.
func (s TaskState) IsTerminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// IsInterrupted reports whether s is input-required or auth-required.
func (s TaskState) IsInterrupted() bool {
	return s == StateInputRequired || s == StateAuthRequired
}

// V03 is the v0.3 wire name ("input-required", "unknown" for unspecified).
func (s TaskState) V03() string {
	if s == StateUnspecified || s == "" {
		return "unknown"
	}
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}

// Wire is the a2a-go representation of s.
func (s TaskState) Wire() a2av1.TaskState {
	if s == StateUnspecified {
		return a2av1.TaskStateUnspecified
	}
	return a2av1.TaskState(s)
}

// StateOf converts an a2a-go state; "" becomes StateUnspecified.
func StateOf(s a2av1.TaskState) TaskState {
	if s == a2av1.TaskStateUnspecified {
		return StateUnspecified
	}
	return TaskState(s)
}

// ParseState accepts a v1.0 name ("TASK_STATE_WORKING") or a v0.3 name
// ("working"); ok is false for anything else.
func ParseState(name string) (TaskState, bool) {
	for _, s := range AllStates() {
		if name == string(s) || name == s.V03() {
			return s, true
		}
	}
	return StateUnspecified, false
}

// CanTransition reports whether a task may move from s to next, as a
// *fault.Error when it may not: a terminal task never changes (moving it to
// canceled is TaskNotCancelable, anything else InvalidState); nothing moves
// back to submitted or to unspecified. Non-terminal states may repeat (a
// working task reports progress while staying working).
func (s TaskState) CanTransition(next TaskState) error {
	if s.IsTerminal() {
		if next == StateCanceled {
			return fault.Newf(fault.TaskNotCancelable, fault.ReasonTaskTerminal, "task is already %s", s.V03())
		}
		return fault.Newf(fault.InvalidState, fault.ReasonTaskTerminal, "task is already %s and never changes", s.V03())
	}
	switch next {
	case StateUnspecified:
		return fault.New(fault.InvalidState, fault.ReasonInvalidTransition, "a task cannot become unspecified")
	case StateSubmitted:
		if s != StateSubmitted && s != StateUnspecified {
			return fault.Newf(fault.InvalidState, fault.ReasonInvalidTransition, "a %s task cannot go back to submitted", s.V03())
		}
	}
	if _, ok := ParseState(string(next)); !ok {
		return fault.Newf(fault.InvalidState, fault.ReasonInvalidTransition, "unknown task state %q", next)
	}
	return nil
}

// StateForError is the state a task ends in when its execution failed with
// err, as the one error table (fault.Kind.TaskState) says; failed when the
// kind is not a task outcome.
func StateForError(err error) TaskState {
	st := fault.KindOf(err).TaskState()
	if st == "" {
		return StateFailed
	}
	return TaskState(st)
}
