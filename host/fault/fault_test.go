package fault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

func TestCodeTable(t *testing.T) {
	t.Parallel()
	want := map[fault.Kind]int{
		fault.Parse: -32700, fault.InvalidRequest: -32600, fault.MethodNotFound: -32601,
		fault.InvalidParams: -32602, fault.Internal: -32603, fault.Canceled: -32000,
		fault.SessionNotFound: -32100, fault.PlanNotFound: -32101, fault.AgentNotFound: -32102,
		fault.SkillFailed: -32103, fault.Timeout: -32104, fault.Unauthorized: -32105, fault.Forbidden: -32105,
		fault.ResourceExhausted: -32106, fault.InvalidState: -32107,
		fault.TaskNotFound: -32001, fault.TaskNotCancelable: -32002, fault.PushNotSupported: -32003,
		fault.UnsupportedOperation: -32004, fault.ContentTypeNotSupported: -32005,
		fault.InvalidAgentResponse: -32006, fault.ExtendedCardNotConfigured: -32007,
		fault.ExtensionSupportRequired: -32008, fault.VersionNotSupported: -32009,
	}
	got := map[fault.Kind]int{}
	for _, k := range fault.Kinds() {
		got[k] = k.Code()
		if k.Message() == "" || k.String() == "" {
			t.Errorf("kind %d has no message or name", k)
		}
		back, ok := fault.KindOfCode(k.Code())
		if !ok || back.Code() != k.Code() {
			t.Errorf("KindOfCode(%d) = %v, %v; want a kind with the same code", k.Code(), back, ok)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("code table mismatch (-want +got):\n%s", diff)
	}
}

func TestFromClassifies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		wantKind   fault.Kind
		wantReason string
	}{
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), fault.Timeout, fault.ReasonTimeout},
		{"canceled", context.Canceled, fault.Canceled, fault.ReasonCanceled},
		{"wrapped fault", fmt.Errorf("x: %w", fault.New(fault.ResourceExhausted, fault.ReasonMemoryLimit, "m")), fault.ResourceExhausted, fault.ReasonMemoryLimit},
		{"plain", errors.New("boom"), fault.Internal, fault.ReasonInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := fault.From(tt.err)
			if got.Kind != tt.wantKind || got.Reason != tt.wantReason {
				t.Errorf("From(%v) = %v/%q, want %v/%q", tt.err, got.Kind, got.Reason, tt.wantKind, tt.wantReason)
			}
		})
	}
}

func TestIsMatchesKind(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrapped: %w", fault.New(fault.Timeout, fault.ReasonTimeout, "too slow"))
	if !errors.Is(err, fault.ErrTimeout) {
		t.Error("errors.Is(timeout, ErrTimeout) = false")
	}
	if errors.Is(err, fault.ErrResourceExhausted) {
		t.Error("a timeout matched ErrResourceExhausted")
	}
	if !errors.Is(err, fault.New(fault.Timeout, fault.ReasonTimeout, "")) {
		t.Error("reason-qualified match failed")
	}
	if errors.Is(err, fault.New(fault.Timeout, fault.ReasonMemoryLimit, "")) {
		t.Error("matched with a different reason")
	}
}
