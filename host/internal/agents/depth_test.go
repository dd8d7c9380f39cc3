package agents_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/skillhost/skillhost/host/internal/agents"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/remote"
)

// TestDepth: the router's own value wins; else the request's header (a peer
// host's hop count); malformed or negative headers count as 0 and huge ones
// are capped (they are past every limit anyway).
func TestDepth(t *testing.T) {
	t.Parallel()
	withHeader := func(v string) context.Context {
		h := http.Header{}
		h.Set(remote.DepthHeader, v)
		return jsonrpc.WithTransport(context.Background(), jsonrpc.TransportInfo{Name: "http", Header: h.Get})
	}
	tests := []struct {
		name string
		ctx  context.Context
		want int
	}{
		{"none", context.Background(), 0},
		{"header", withHeader("3"), 3},
		{"malformed", withHeader("three"), 0},
		{"negative", withHeader("-4"), 0},
		{"huge", withHeader("99999999999"), 1 << 16},
		{"attached wins", agents.WithDepth(withHeader("3"), 5), 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := agents.Depth(tt.ctx); got != tt.want {
				t.Errorf("Depth = %d, want %d", got, tt.want)
			}
		})
	}
}
