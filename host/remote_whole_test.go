package host_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// billingManifest is a plugin whose skill "charge" returns its input.
const billingManifest = `name: payments
version: 1.0.0
description: Billing skills
wasm: hostile.wasm
limits: {timeout: 10s, memory: 16MiB, output: 64KiB, concurrency: 4}
skills:
  - {id: charge, function: echo, description: Charges (echoes its input)}
`

// TestRemotePeerAsAWhole: the operator's scenario. agents.remote names a
// skillhost peer by an id of the operator's choosing, with no agent key:
// agent/call target=billing method=charge runs the peer's skill charge,
// whichever of its plugins serves it — the peer is one agent whose methods
// are its skills, as any A2A peer is. With agent, the call still goes to
// that one plugin of the peer, and a skill of another plugin is unknown
// there.
func TestRemotePeerAsAWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "payments", billingManifest)
	mustPlugin(t, dir, "tools", toolsManifest)
	b := mustHost(t, dir)
	a, _ := mustHostWith(t, t.TempDir(), func(c *config.Config) {
		// As an operator writes it: {id: billing, url: …}, no agent.
		billing := remoteAgent("billing", b.URL)
		billing.Agent = ""
		// b-tools has agent "tools": one plugin of the peer.
		c.Agents.Remote = []config.RemoteAgent{billing, remoteAgent("b-tools", b.URL)}
	})
	sid := a.mustSession(t)
	got := a.mustResult(t, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "billing", "method": "charge", "params": map[string]any{"cents": 250}})
	if got["agent_id"] != "billing" || got["method"] != "charge" {
		t.Errorf("agent/call = %v, want agent billing, method charge", got)
	}
	if diff := cmp.Diff(map[string]any{"cents": 250.0}, got["result"]); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	// The whole peer: a skill of its other plugin too; an unknown skill is
	// the peer's answer.
	if got := a.mustResult(t, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "billing", "method": "echo", "params": map[string]any{"k": 1}}); got["agent_id"] != "billing" {
		t.Errorf("agent/call of the peer's other plugin = %v", got)
	}
	wantError(t, a.call(t, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "billing", "method": "nope"}), -32602, "unknown_skill")
	// agent picks one plugin of the peer: charge is not tools'.
	wantError(t, a.call(t, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "b-tools", "method": "charge"}), -32602, "unknown_skill")
	if got := a.mustResult(t, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "b-tools", "method": "echo", "params": map[string]any{"k": 2}}); got["agent_id"] != "b-tools" {
		t.Errorf("agent/call through agent tools = %v", got)
	}
}
