package jsonrpc

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/client"
	"github.com/skillhost/skillhost/host/fault"
)

// engineDoer calls e directly, like a transport would.
func engineDoer(e *Engine) func(context.Context, []byte) ([]byte, error) {
	return func(ctx context.Context, body []byte) ([]byte, error) {
		return e.Handle(ctx, body).Body, nil
	}
}

func TestClientCall(t *testing.T) {
	t.Parallel()
	e := specEngine(t, nil)
	e.Register("closed", func(context.Context, *Request) (any, error) {
		return nil, fault.New(fault.SessionNotFound, fault.ReasonSessionClosed, "session s1 is closed").With("session_id", "s1")
	})
	e.Register("task", func(context.Context, *Request) (any, error) {
		return nil, fault.New(fault.TaskNotFound, fault.ReasonTaskNotFound, "no task t9").With("task_id", "t9")
	})
	doer := engineDoer(e)

	var diff int
	if err := client.Call(t.Context(), doer, "subtract", []int{42, 23}, &diff); err != nil || diff != 19 {
		t.Fatalf("Call subtract = %d, %v", diff, err)
	}
	if err := client.Call(t.Context(), doer, "get_data", nil, nil); err != nil {
		t.Fatalf("Call with nil params/result: %v", err)
	}

	tests := []struct {
		method     string
		wantKind   fault.Kind
		wantReason string
		wantMsg    string
		wantData   map[string]any
	}{
		{"closed", fault.SessionNotFound, fault.ReasonSessionClosed, "session s1 is closed", map[string]any{"session_id": "s1"}},
		{"task", fault.TaskNotFound, "task_not_found", "no task t9", map[string]any{"task_id": "t9"}},
		{"missing", fault.MethodNotFound, fault.ReasonUnknownMethod, `method "missing" not found`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			t.Parallel()
			err := client.Call(t.Context(), doer, tt.method, map[string]string{"request_id": "r1"}, nil)
			var fe *fault.Error
			if !errors.As(err, &fe) {
				t.Fatalf("Call error %v is not a *fault.Error", err)
			}
			if fe.Kind != tt.wantKind || fe.Reason != tt.wantReason || fe.Message() != tt.wantMsg {
				t.Errorf("got %v/%q/%q, want %v/%q/%q", fe.Kind, fe.Reason, fe.Message(), tt.wantKind, tt.wantReason, tt.wantMsg)
			}
			if fe.Data["request_id"] != "r1" {
				t.Errorf("data.request_id = %v, want r1", fe.Data["request_id"])
			}
			for k, v := range tt.wantData {
				if diff := cmp.Diff(v, fe.Data[k]); diff != "" {
					t.Errorf("data.%s (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

func TestClientCallTransportFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection refused")
	tests := []struct {
		name string
		doer func(context.Context, []byte) ([]byte, error)
	}{
		{"transport error", func(context.Context, []byte) ([]byte, error) { return nil, boom }},
		{"not json", func(context.Context, []byte) ([]byte, error) { return []byte("<html>"), nil }},
		{"wrong id", func(context.Context, []byte) ([]byte, error) {
			return []byte(`{"jsonrpc":"2.0","result":1,"id":"other"}`), nil
		}},
		{"no result", func(context.Context, []byte) ([]byte, error) { return []byte(`{"jsonrpc":"2.0","id":null}`), nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := client.Call(t.Context(), tt.doer, "x", nil, nil)
			var fe *fault.Error
			if err == nil || errors.As(err, &fe) {
				t.Errorf("Call = %v, want a non-fault error", err)
			}
		})
	}
	if err := client.Call(t.Context(), tests[0].doer, "x", nil, nil); !errors.Is(err, boom) {
		t.Errorf("transport error not wrapped: %v", err)
	}
	unknown := func(context.Context, []byte) ([]byte, error) {
		return []byte(`{"jsonrpc":"2.0","error":{"code":-31999,"message":"odd"},"id":null}`), nil
	}
	var fe *fault.Error
	if err := client.Call(t.Context(), unknown, "x", nil, nil); !errors.As(err, &fe) || fe.Kind != fault.Internal || fe.Data["code"] != -31999 {
		t.Errorf("unknown code: %v %+v", err, fe)
	}
}
