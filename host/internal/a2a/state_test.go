package a2a_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a"
)

func TestTaskStateClassification(t *testing.T) {
	t.Parallel()
	type class struct {
		Terminal, Interrupted bool
		V03                   string
	}
	want := map[a2a.TaskState]class{
		a2a.StateUnspecified:   {V03: "unknown"},
		a2a.StateSubmitted:     {V03: "submitted"},
		a2a.StateWorking:       {V03: "working"},
		a2a.StateCompleted:     {Terminal: true, V03: "completed"},
		a2a.StateFailed:        {Terminal: true, V03: "failed"},
		a2a.StateCanceled:      {Terminal: true, V03: "canceled"},
		a2a.StateInputRequired: {Interrupted: true, V03: "input-required"},
		a2a.StateRejected:      {Terminal: true, V03: "rejected"},
		a2a.StateAuthRequired:  {Interrupted: true, V03: "auth-required"},
	}
	got := map[a2a.TaskState]class{}
	for _, s := range a2a.AllStates() {
		got[s] = class{s.IsTerminal(), s.IsInterrupted(), s.V03()}
		back, ok := a2a.ParseState(s.V03())
		if !ok || back != s {
			t.Errorf("ParseState(%q) = %v, %v", s.V03(), back, ok)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state table (-want +got):\n%s", diff)
	}
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to a2a.TaskState
		want     *fault.Error // nil = allowed
	}{
		{a2a.StateSubmitted, a2a.StateWorking, nil},
		{a2a.StateWorking, a2a.StateWorking, nil},
		{a2a.StateWorking, a2a.StateCompleted, nil},
		{a2a.StateSubmitted, a2a.StateRejected, nil},
		{a2a.StateWorking, a2a.StateAuthRequired, nil},
		{a2a.StateInputRequired, a2a.StateWorking, nil},
		{a2a.StateWorking, a2a.StateSubmitted, fault.ErrInvalidState},
		{a2a.StateCompleted, a2a.StateCanceled, &fault.Error{Kind: fault.TaskNotCancelable}},
		{a2a.StateFailed, a2a.StateWorking, fault.ErrInvalidState},
		{a2a.StateCanceled, a2a.StateCompleted, fault.ErrInvalidState},
		{a2a.StateRejected, a2a.StateRejected, fault.ErrInvalidState},
	}
	for _, tt := range tests {
		t.Run(tt.from.V03()+"->"+tt.to.V03(), func(t *testing.T) {
			t.Parallel()
			err := tt.from.CanTransition(tt.to)
			switch {
			case tt.want == nil && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("got %v, want kind %v", err, tt.want.Kind)
			}
		})
	}
}

func TestStateForError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want a2a.TaskState
	}{
		{fault.New(fault.Timeout, fault.ReasonTimeout, "slow"), a2a.StateFailed},
		{fault.New(fault.InvalidParams, fault.ReasonSchema, "bad"), a2a.StateRejected},
		{fault.New(fault.SkillFailed, fault.ReasonTrap, "trap"), a2a.StateFailed},
		{fault.New(fault.ResourceExhausted, fault.ReasonMemoryLimit, "mem"), a2a.StateFailed},
		{fault.New(fault.Canceled, fault.ReasonCanceled, "c"), a2a.StateCanceled},
		{fault.New(fault.Unauthorized, "", "who"), a2a.StateAuthRequired},
		{fault.New(fault.TaskNotFound, "", "protocol error"), a2a.StateFailed},
	}
	for _, tt := range tests {
		if got := a2a.StateForError(tt.err); got != tt.want {
			t.Errorf("StateForError(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
