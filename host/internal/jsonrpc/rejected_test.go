package jsonrpc

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

// WithRejected hears of every request refused before a handler ran, once,
// with its method when it has one; calls that reach a handler are the
// middleware's, not its.
func TestWithRejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []string // "method reason"
	}{
		{"handled", `{"jsonrpc":"2.0","id":1,"method":"ok"}`, nil},
		{"handler error", `{"jsonrpc":"2.0","id":1,"method":"fails"}`, nil},
		{"not JSON", `{nope`, []string{" parse_error"}},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"ok","params":{"x":"` + strings.Repeat("x", 300) + `"}}`, []string{" body_too_large"}},
		{"not a request", `{"id":1}`, []string{" invalid_request"}},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"nope"}`, []string{"nope unknown_method"}},
		{"bad envelope", `{"jsonrpc":"2.0","id":1,"method":"ok","params":{"version":"9.9"}}`, []string{"ok unsupported_version"}},
		{"stream in a batch", `[{"jsonrpc":"2.0","id":1,"method":"stream"},{"jsonrpc":"2.0","id":2,"method":"ok"},{"id":3}]`,
			[]string{" invalid_request", "stream stream_not_batchable"}},
		{"empty batch", `[]`, []string{" empty_batch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got []string
			e := NewEngine(testLimits, withMaxBody(256), WithRejected(func(_ context.Context, method string, err error) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, method+" "+fault.From(err).WireReason())
			}))
			e.Register("ok", func(context.Context, *Request) (any, error) { return "fine", nil })
			e.Register("fails", func(context.Context, *Request) (any, error) {
				return nil, fault.New(fault.Timeout, fault.ReasonTimeout, "slow")
			})
			e.Register("stream", func(context.Context, *Request) (any, error) { return "never", nil }, Streaming())
			e.Handle(t.Context(), []byte(tt.body))
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rejected (-want +got):\n%s", diff)
			}
		})
	}
}
