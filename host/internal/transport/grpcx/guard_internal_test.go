package grpcx

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// TestAuthenticateWithoutKeys: without API keys only loopback clients are
// served, as the loopback principal (HTTP's rule); any other address is
// refused loopback_only whatever it sends.
func TestAuthenticateWithoutKeys(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{}.withDefaults()}
	tests := []struct {
		name   string
		addr   net.Addr
		md     metadata.MD
		reason string
	}{
		{"loopback v4", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5000}, nil, ""},
		{"loopback v6", &net.TCPAddr{IP: net.IPv6loopback, Port: 5000}, nil, ""},
		{"private address", &net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 5000}, nil, fault.ReasonLoopbackOnly},
		{"public address with a key", &net.TCPAddr{IP: net.ParseIP("203.0.113.9"), Port: 5000}, metadata.Pairs("x-api-key", "sk_x"), fault.ReasonLoopbackOnly},
		{"no address", nil, nil, fault.ReasonLoopbackOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := s.authenticate(context.Background(), tt.md, tt.addr)
			if tt.reason == "" {
				if err != nil || p.String() != auth.Local(LoopbackPrincipal).String() {
					t.Errorf("authenticate = %v, %v; want the loopback principal", p, err)
				}
				return
			}
			if fe := fault.From(err); err == nil || fe.Kind != fault.Forbidden || fe.Reason != tt.reason {
				t.Errorf("authenticate error = %v; want Forbidden %s", err, tt.reason)
			}
		})
	}
}
