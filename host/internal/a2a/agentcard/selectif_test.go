package agentcard_test

import (
	"testing"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
)

// The fixture of spec 000: JSON-RPC and HTTP+JSON endpoints, both 1.0.
func echoCard() *a2av1.AgentCard {
	return &a2av1.AgentCard{Name: "echo", SupportedInterfaces: []*a2av1.AgentInterface{
		{URL: "https://echo.example/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
		{URL: "https://echo.example/rest", ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"},
	}}
}

func TestSelectInterface(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, binding, version, wantURL string
	}{
		{"JSON-RPC 1.0", "JSONRPC", "1.0", "https://echo.example/a2a"},
		{"HTTP+JSON 1.0", "HTTP+JSON", "1.0", "https://echo.example/rest"},
		{"gRPC 1.0", "GRPC", "1.0", ""},
		{"JSON-RPC 0.3", "JSONRPC", "0.3", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := agentcard.SelectInterface(echoCard(), tt.binding, tt.version)
			gotURL := ""
			if got != nil {
				gotURL = got.URL
			}
			if gotURL != tt.wantURL {
				t.Errorf("SelectInterface(%s, %s) = %q, want %q", tt.binding, tt.version, gotURL, tt.wantURL)
			}
		})
	}
	if agentcard.SelectInterface(nil, "JSONRPC", "1.0") != nil {
		t.Error("nil card selected an interface")
	}
}

func TestSelectInterfacePrefersCardOrder(t *testing.T) {
	t.Parallel()
	c := echoCard()
	c.SupportedInterfaces = append(c.SupportedInterfaces,
		&a2av1.AgentInterface{URL: "https://backup.example/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"})
	if got := agentcard.SelectInterface(c, "JSONRPC", "1.0"); got.URL != "https://echo.example/a2a" {
		t.Errorf("got %q, want the first matching interface", got.URL)
	}
}
