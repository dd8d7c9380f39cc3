package jsonrpc

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

// TestRun: a typed call runs through the middleware under its method's
// name, with the endpoint's filter and panic recovery; a method that is
// not registered, or that the endpoint filters out, never runs.
func TestRun(t *testing.T) {
	t.Parallel()
	var seen []string
	eng := NewEngine(testLimits, WithMiddleware(func(method string, h Handler) Handler {
		return func(ctx context.Context, req *Request) (any, error) {
			seen = append(seen, method)
			if method == "Refused" {
				return nil, fault.New(fault.Forbidden, fault.ReasonScopeDenied, "no")
			}
			return h(ctx, req)
		}
	}))
	for _, m := range []string{"GetTask", "Refused", "Panics"} {
		eng.RegisterA2A(m, func(context.Context, *Request) (any, error) { return "registered handler", nil })
	}
	onlyGet := WithTransport(t.Context(), TransportInfo{Allow: func(m string) bool { return m == "GetTask" }})
	ran := 0
	typed := func(v any) func(context.Context) (any, error) {
		return func(context.Context) (any, error) {
			ran++
			if v == "panic" {
				panic("boom")
			}
			return v, nil
		}
	}
	for _, tt := range []struct {
		name   string
		ctx    context.Context
		method string
		want   any
		kind   fault.Kind
		reason string
	}{
		{"typed call", t.Context(), "GetTask", 42, 0, ""},
		{"refused by middleware", t.Context(), "Refused", nil, fault.Forbidden, fault.ReasonScopeDenied},
		{"panic", t.Context(), "Panics", "panic", fault.Internal, fault.ReasonInternal},
		{"unknown method", t.Context(), "NoSuchMethod", 1, fault.MethodNotFound, fault.ReasonUnknownMethod},
		{"filtered by the endpoint", onlyGet, "Refused", 1, fault.MethodNotFound, fault.ReasonUnknownMethod},
	} {
		res, err := eng.Run(tt.ctx, tt.method, typed(tt.want))
		if tt.reason == "" {
			if err != nil || res != tt.want {
				t.Errorf("%s: Run = %v, %v; want %v", tt.name, res, err, tt.want)
			}
			continue
		}
		fe := fault.From(err)
		if err == nil || fe.Kind != tt.kind || fe.Reason != tt.reason {
			t.Errorf("%s: Run error = %v; want %v %s", tt.name, err, tt.kind, tt.reason)
		}
	}
	if diff := cmp.Diff([]string{"GetTask", "Refused", "Panics"}, seen); diff != "" {
		t.Errorf("middleware saw (-want +got):\n%s", diff)
	}
	if ran != 2 { // GetTask and Panics
		t.Errorf("typed calls ran %d times; want 2", ran)
	}
}
