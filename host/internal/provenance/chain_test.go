package provenance_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

func mustSigner(t *testing.T) *provenance.Signer {
	t.Helper()
	k, err := identity.Generate(identity.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	s, err := identity.NewSigner([]*identity.PrivateKey{k}, "")
	if err != nil {
		t.Fatal(err)
	}
	return provenance.NewSigner(s, "host-a")
}

func mustChain(t *testing.T, p *provenance.Signer, links ...provenance.Link) (*provenance.Chain, json.RawMessage) {
	t.Helper()
	c := &provenance.Chain{}
	for _, l := range links {
		if err := p.Append(c, l); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, b
}

func TestChainVerifies(t *testing.T) {
	t.Parallel()
	p := mustSigner(t)
	out, _ := provenance.Digest(map[string]any{"x": 1})
	c, raw := mustChain(t, p,
		provenance.Link{Kind: provenance.KindTransition, Subject: "plan:p", To: "created"},
		provenance.Link{Kind: provenance.KindTransition, Subject: "plan:p", From: "created", To: "executing"},
		provenance.Link{Kind: provenance.KindTransition, Subject: "plan:p/step:a", From: "pending", To: "completed"},
		provenance.Link{Kind: provenance.KindArtifact, Subject: "plan:p/step:a", Artifact: &provenance.ArtifactRef{ID: "step:a", SHA256: out}},
		provenance.Link{Kind: provenance.KindPeer, Subject: "plan:p/step:a", Peer: &provenance.PeerResult{Agent: "billing", ResultHash: out}},
		provenance.Link{Kind: provenance.KindTransition, Subject: "plan:p", From: "executing", To: "completed"},
	)
	want := provenance.Expect{States: map[string]string{"plan:p": "completed", "plan:p/step:a": "completed"},
		Artifacts: map[string]string{"step:a": out}}
	rep := provenance.Verify(raw, p.Keys(), want)
	if !rep.Valid || rep.Links != 6 || rep.Head != c.Head() || c.State() != "completed" {
		t.Fatalf("report %+v (%v), head %s", rep, rep.Err(), c.Head())
	}
	if c.Links[0].By != "host-a" || c.Links[1].Prev == "" || c.Links[0].Prev != "" {
		t.Errorf("links not completed: %+v", c.Links[:2])
	}
	// Against other keys: nothing verifies, and the error says whose keys signed.
	rep = provenance.Verify(raw, mustSigner(t).Keys(), want)
	if rep.Valid || rep.Failure.Link != 0 || !strings.Contains(rep.Failure.Reason, "none of which is trusted") {
		t.Errorf("foreign keys: %+v", rep.Failure)
	}
	// Wrong expectations are named.
	bad := want
	bad.States = map[string]string{"plan:p": "failed"}
	if rep := provenance.Verify(raw, p.Keys(), bad); rep.Valid || rep.Failure.Link != 5 || rep.Failure.Field != "to" {
		t.Errorf("state mismatch: %+v", rep.Failure)
	}
}

func TestChainRefusesBrokenSequences(t *testing.T) {
	t.Parallel()
	p := mustSigner(t)
	_, raw := mustChain(t, p,
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", To: "SUBMITTED"},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", From: "WORKING", To: "COMPLETED"},
	)
	rep := provenance.Verify(raw, p.Keys(), provenance.Expect{})
	if rep.Valid || rep.Failure.Link != 1 || rep.Failure.Field != "from" {
		t.Errorf("a skipped state: %+v", rep.Failure)
	}
	_, raw = mustChain(t, p, provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", From: "WORKING", To: "COMPLETED"})
	if rep := provenance.Verify(raw, p.Keys(), provenance.Expect{}); rep.Valid {
		t.Error("a task chain not starting with its creation verified")
	}
	var added map[string]any
	_, raw = mustChain(t, p, provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", To: "SUBMITTED"})
	_ = json.Unmarshal(raw, &added)
	added["links"].([]any)[0].(map[string]any)["extra"] = true
	b, _ := json.Marshal(added)
	if rep := provenance.Verify(b, p.Keys(), provenance.Expect{}); rep.Valid || rep.Failure.Link != 0 {
		t.Errorf("an added member: %+v", rep)
	}
}

// A fragment (the links a task event carries) verifies on its own: its
// signatures and its inner prev links; any change names the link by seq.
func TestVerifyLinks(t *testing.T) {
	t.Parallel()
	p := mustSigner(t)
	c, _ := mustChain(t, p,
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", To: "SUBMITTED"},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", From: "SUBMITTED", To: "WORKING"},
		provenance.Link{Kind: provenance.KindArtifact, Subject: "task:t", Artifact: &provenance.ArtifactRef{ID: "a", SHA256: "sha256:00"}},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", From: "WORKING", To: "COMPLETED"},
	)
	fragment := func(edit func(links []provenance.Link)) json.RawMessage {
		links := append([]provenance.Link(nil), c.Links[2:]...)
		edit(links)
		b, err := json.Marshal(provenance.Chain{Links: links})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name      string
		raw       json.RawMessage
		keys      *identity.KeySet
		link      int
		field     string
		wantValid bool
	}{
		{"as signed", fragment(func([]provenance.Link) {}), p.Keys(), 0, "", true},
		{"a changed state", fragment(func(l []provenance.Link) { l[1].To = "FAILED" }), p.Keys(), 3, "signatures", false},
		{"a changed artifact digest", fragment(func(l []provenance.Link) { l[0].Artifact.SHA256 = "sha256:11" }), p.Keys(), 2, "signatures", false},
		{"links out of order", fragment(func(l []provenance.Link) { l[0], l[1] = l[1], l[0] }), p.Keys(), 2, "prev", false},
		{"another host's keys", fragment(func([]provenance.Link) {}), mustSigner(t).Keys(), 2, "signatures", false},
		{"not a fragment", json.RawMessage(`{"links":[]}`), p.Keys(), -1, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := provenance.VerifyLinks(tt.raw, tt.keys)
			if rep.Valid != tt.wantValid {
				t.Fatalf("valid = %v, want %v (%v)", rep.Valid, tt.wantValid, rep.Err())
			}
			if tt.wantValid {
				if rep.Head != c.Head() || rep.Links != 2 {
					t.Errorf("report %+v, want head %s", rep, c.Head())
				}
				return
			}
			if rep.Failure.Link != tt.link || rep.Failure.Field != tt.field {
				t.Errorf("failure %+v, want link %d field %q", rep.Failure, tt.link, tt.field)
			}
		})
	}
}

func TestDropFinal(t *testing.T) {
	t.Parallel()
	p := mustSigner(t)
	c, _ := mustChain(t, p,
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", To: "SUBMITTED"},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", From: "SUBMITTED", To: "WORKING"},
		provenance.Link{Kind: provenance.KindArtifact, Subject: "task:t", Artifact: &provenance.ArtifactRef{ID: "a", SHA256: "sha256:00"}},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", From: "WORKING", To: "COMPLETED"},
	)
	c.DropFinal(func(s string) bool { return s == "COMPLETED" })
	if c.Len() != 2 || c.State() != "WORKING" {
		t.Errorf("after DropFinal: %d links, state %s", c.Len(), c.State())
	}
	if err := (*provenance.Signer)(nil).Append(c, provenance.Link{}); err != nil || c.Len() != 2 {
		t.Error("a nil signer appended")
	}
}

// PeerOf reads a peer's task: its id, final state and the head of its
// chain, which is the head the peer's own verification reports.
func TestPeerOf(t *testing.T) {
	t.Parallel()
	p := mustSigner(t)
	_, raw := mustChain(t, p,
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t1", To: "TASK_STATE_SUBMITTED"},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t1", From: "TASK_STATE_SUBMITTED", To: "TASK_STATE_COMPLETED"},
	)
	task := []byte(`{"id":"t1","status":{"state":"TASK_STATE_COMPLETED"},"metadata":{"` + provenance.ExtURI + `":` + string(raw) + `}}`)
	peer, err := provenance.PeerOf("billing", "https://billing.example", "", task, map[string]any{"total": 3})
	if err != nil {
		t.Fatal(err)
	}
	rep := provenance.VerifyTask(task, p.Keys())
	if !rep.Valid || peer.Head != rep.Head || peer.TaskID != "t1" || peer.State != "TASK_STATE_COMPLETED" || len(peer.HeadSigs) != 1 {
		t.Errorf("peer %+v, report %+v (%v)", peer, rep, rep.Err())
	}
	if d, _ := provenance.Digest(map[string]any{"total": 3}); peer.ResultHash != d {
		t.Errorf("result digest %s, want %s", peer.ResultHash, d)
	}
}
