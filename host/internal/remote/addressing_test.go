package remote_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/remote"
)

// TestAddressing: a skillhost peer without agent is one agent whose
// methods are its skills (skill/execute there, skill_id = the method);
// with agent, the call is agent/call to that plugin of the peer. Either
// way the output is the skill's.
func TestAddressing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, agent string
		want        rpcCall
	}{
		{"the peer as a whole", "", rpcCall{method: "_cleveragents/skill/execute",
			params: map[string]any{"skill_id": "charge", "skill_params": map[string]any{"cents": 5.0}}}},
		{"one plugin of the peer", "payments", rpcCall{method: "_cleveragents/agent/call",
			params: map[string]any{"target_agent_id": "payments", "method": "charge", "params": map[string]any{"cents": 5.0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			peer := newFakePeer(t, func(int) reply { return okReply })
			cfg := peerConfig("billing", peer.srv.URL)
			cfg.Agent = tt.agent
			ps := mustPeers(t, nil, nil, cfg)
			res, err := ps.Call(callCtx(t), remote.Call{ID: "billing", Method: "charge", Input: json.RawMessage(`{"cents":5}`)})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Output) != `{"ok":true}` || !res.Interface.Extension {
				t.Errorf("Call = %s over %+v, want the skill's output over the extension", res.Output, res.Interface)
			}
			peer.mu.Lock()
			defer peer.mu.Unlock()
			if len(peer.requests) != 1 {
				t.Fatalf("peer got %d calls, want 1", len(peer.requests))
			}
			got := peer.requests[0]
			delete(got.params, "session_id") // this host's session there
			delete(got.params, "timeout")
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(rpcCall{})); diff != "" {
				t.Errorf("the peer's call (-want +got):\n%s", diff)
			}
		})
	}
}
