package host_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// A plan step delegated to a remote skillhost that signs its tasks: host A
// asks B over A2A SendMessage (not agent/call), and A's plan chain records
// B's signed result — B's task, its final state, the head of B's chain
// with its signatures, B's JWKS and the digest of the output — as a peer
// link that A signs; B's own task chain ends in exactly that head.
func TestPlanRecordsSignedPeerResult(t *testing.T) {
	t.Parallel()
	keys := t.TempDir()
	aKey, bKey := mustKeygen(t, keys, "a.key", "ed25519"), mustKeygen(t, keys, "b.key", "ed25519")
	b, _ := mustHostWith(t, toolsDir(t), func(c *config.Config) { c.Identity.KeyFile = []string{bKey.Private} })
	a, _ := mustHostWith(t, t.TempDir(), func(c *config.Config) {
		c.Identity.KeyFile = []string{aKey.Private}
		c.Agents.Remote = []config.RemoteAgent{remoteAgent("b-tools", b.URL)}
	})
	sid := a.mustSession(t)
	a.mustResult(t, "_cleveragents/plan/create", map[string]any{"session_id": sid, "plan_id": "p", "plan_definition": map[string]any{
		"name": "delegate", "steps": []any{map[string]any{"id": "ask", "type": "agent", "agent": "b-tools", "action": "echo", "params": map[string]any{"text": "hi"}}}}})
	a.mustResult(t, "_cleveragents/plan/execute", map[string]any{"session_id": sid, "plan_id": "p"})
	var st struct {
		Status     string          `json:"status"`
		Provenance json.RawMessage `json:"provenance"`
	}
	var last json.RawMessage
	if !testutil.PollEvery(60*time.Second, 50*time.Millisecond, func() bool {
		r := a.call(t, "_cleveragents/plan/status", map[string]any{"session_id": sid, "plan_id": "p", "provenance": true})
		if r.Error != nil {
			t.Fatalf("plan/status: %d %s", r.Error.Code, r.Error.Message)
		}
		if err := json.Unmarshal(r.Result, &st); err != nil {
			t.Fatal(err)
		}
		last = r.Result
		if st.Status == "failed" {
			t.Fatalf("plan %s: %s", st.Status, r.Result)
		}
		return st.Status == "completed"
	}) {
		t.Fatalf("plan %s: %s", st.Status, last)
	}
	var chain provenance.Chain
	if err := json.Unmarshal(st.Provenance, &chain); err != nil {
		t.Fatalf("plan/status provenance %s: %v", st.Provenance, err)
	}
	var peer *provenance.PeerResult
	for _, l := range chain.Links {
		if l.Kind == provenance.KindPeer {
			peer = l.Peer
		}
	}
	if peer == nil {
		t.Fatalf("no peer link in the plan's chain: %s", st.Provenance)
	}
	out, _ := provenance.Digest(json.RawMessage(`{"text":"hi"}`))
	if peer.Agent != "b-tools" || peer.State != "TASK_STATE_COMPLETED" || peer.TaskID == "" || peer.ResultHash != out ||
		peer.JWKS != b.URL+"/.well-known/jwks.json" || len(peer.HeadSigs) != 1 || peer.Head == "" {
		t.Errorf("peer result %+v", peer)
	}
	if v := a.mustResult(t, "_cleveragents/plan/verify", map[string]any{"session_id": sid, "plan_id": "p"}); v["valid"] != true {
		t.Errorf("plan/verify: %v", v)
	}
	// B's task, read from B, verifies against B's keys and ends in the head A recorded.
	r := b.call(t, "GetTask", map[string]any{"id": peer.TaskID})
	if r.Error != nil {
		t.Fatalf("GetTask on B: %d %s", r.Error.Code, r.Error.Message)
	}
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(r.Result, &doc); err != nil {
		t.Fatal(err)
	}
	_, jwks := b.get(t, identity.JWKSPath)
	bKeys, err := identity.ParseJWKS(jwks)
	if err != nil {
		t.Fatal(err)
	}
	rep := provenance.VerifyLinks(doc.Metadata[provenance.ExtURI], bKeys)
	if !rep.Valid || rep.Head != peer.Head {
		t.Errorf("B's chain: valid %v (%v), head %s, A recorded %s", rep.Valid, rep.Err(), rep.Head, peer.Head)
	}
}

// A skill that delegates with agent_call while it runs an A2A task: the
// task's chain on host A gets a peer link for B's signed answer before the
// artifact and the final transition, and the whole chain verifies.
func TestTaskRecordsAgentCallPeer(t *testing.T) {
	t.Parallel()
	keys := t.TempDir()
	aKey, bKey := mustKeygen(t, keys, "a.key", "ed25519"), mustKeygen(t, keys, "b.key", "ed25519")
	b, _ := mustHostWith(t, toolsDir(t), func(c *config.Config) { c.Identity.KeyFile = []string{bKey.Private} })
	dir := t.TempDir()
	mustPluginWasm(t, dir, "relay", "relay.wasm", relayManifest("relay", "ask", "b-tools", "echo", "b-tools"))
	a, _ := mustHostWith(t, dir, func(c *config.Config) {
		allowAgents(c)
		c.Identity.KeyFile = []string{aKey.Private}
		c.Agents.Remote = []config.RemoteAgent{remoteAgent("b-tools", b.URL)}
	})
	res := a.mustResult(t, "SendMessage", sendMessage("ask", map[string]any{"text": "hi"}))
	task, err := json.Marshal(res["task"])
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Status   struct{ State string }     `json:"status"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(task, &doc); err != nil || doc.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("task %s: %v", task, err)
	}
	var chain provenance.Chain
	if err := json.Unmarshal(doc.Metadata[provenance.ExtURI], &chain); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var peer *provenance.PeerResult
	for _, l := range chain.Links {
		kinds = append(kinds, l.Kind)
		if l.Kind == provenance.KindPeer {
			peer = l.Peer
		}
	}
	want := []string{"transition", "transition", "peer", "artifact", "transition"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("links (-want +got):\n%s", diff)
	}
	if peer.Agent != "b-tools" || peer.State != "TASK_STATE_COMPLETED" || peer.TaskID == "" || len(peer.HeadSigs) != 1 {
		t.Errorf("peer result %+v", peer)
	}
	v := a.mustResult(t, "_cleveragents/task/verify", map[string]any{"task": json.RawMessage(task)})
	if v["valid"] != true {
		t.Errorf("task/verify: %v", v)
	}
}
