package provenance_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/internal/provenance"
)

// member is one member of a JSON object written in order.
type member struct {
	name string
	raw  string
}

// object writes members in order, repeated or case-varied names included.
func object(ms ...member) []byte {
	parts := make([]string, len(ms))
	for i, m := range ms {
		name, _ := json.Marshal(m.name)
		parts[i] = string(name) + ":" + m.raw
	}
	return []byte("{" + strings.Join(parts, ",") + "}")
}

// signedTask is a completed task of one artifact whose chain p signed, as
// its members (in the order GetTask writes them).
func signedTask(t *testing.T, p *provenance.Signer) []member {
	t.Helper()
	artifact := `{"artifactId":"a1","parts":[{"data":{"total":3}}]}`
	input := `{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"n":1}}]}`
	ad, _ := provenance.Digest(json.RawMessage(artifact))
	in, _ := provenance.Digest(json.RawMessage(input))
	_, chain := mustChain(t, p,
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t1", To: "TASK_STATE_SUBMITTED",
			Facts: map[string]string{provenance.FactContextID: "c1", provenance.FactInput: in}},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t1", From: "TASK_STATE_SUBMITTED", To: "TASK_STATE_WORKING"},
		provenance.Link{Kind: provenance.KindArtifact, Subject: "task:t1", Artifact: &provenance.ArtifactRef{ID: "a1", SHA256: ad}},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t1", From: "TASK_STATE_WORKING", To: "TASK_STATE_COMPLETED"},
	)
	return []member{{"id", `"t1"`}, {"contextId", `"c1"`}, {"status", `{"state":"TASK_STATE_COMPLETED"}`},
		{"artifacts", "[" + artifact + "]"}, {"history", "[" + input + "]"},
		{"metadata", `{"` + provenance.ExtURI + `":` + string(chain) + `}`}}
}

// TestVerifyTaskReadsWhatEveryReaderReads: issue 20 finding 7. A task
// document carrying forged artifacts, status and history followed by the
// signed ones under other-case names, or a forged id followed by "ID", or
// a repeated member, verified (encoding/json folds case and keeps the
// last), while every case-sensitive reader saw the forged content. Read
// strictly, none of them verifies.
func TestVerifyTaskReadsWhatEveryReaderReads(t *testing.T) {
	t.Parallel()
	p := mustSigner(t)
	real := signedTask(t, p)
	get := func(name string) string {
		for _, m := range real {
			if m.name == name {
				return m.raw
			}
		}
		t.Fatalf("no member %s", name)
		return ""
	}
	forged := []member{{"status", `{"state":"TASK_STATE_COMPLETED","message":{"messageId":"x","role":"ROLE_AGENT","parts":[{"text":"approved"}]}}`},
		{"artifacts", `[{"artifactId":"a1","parts":[{"data":{"total":1000000}}]}]`},
		{"history", `[{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"n":999}}]}]`}}
	tests := []struct {
		name string
		doc  []byte
	}{
		{"forged members, then the signed ones in another case", object(append(append([]member{{"id", get("id")}, {"contextId", get("contextId")}}, forged...),
			member{"Status", get("status")}, member{"Artifacts", get("artifacts")}, member{"History", get("history")}, member{"metadata", get("metadata")})...)},
		{"a forged id, then ID", object(append([]member{{"id", `"t2"`}}, append(real[1:], member{"ID", get("id")})...)...)},
		{"forged members, then the signed ones under the same names", object(append(append([]member{}, forged...), real...)...)},
	}
	if rep := provenance.VerifyTask(object(real...), p.Keys()); !rep.Valid {
		t.Fatalf("the task as signed does not verify: %v", rep.Err())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if rep := provenance.VerifyTask(tt.doc, p.Keys()); rep.Valid {
				t.Errorf("a forged document verifies: %s", tt.doc)
			}
		})
	}
}

// TestVerifyRefusesRepeatedLinkMembers: a link naming a member twice is
// refused, whichever of the two a reader would keep.
func TestVerifyRefusesRepeatedLinkMembers(t *testing.T) {
	t.Parallel()
	p := mustSigner(t)
	_, raw := mustChain(t, p,
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", To: "SUBMITTED"},
		provenance.Link{Kind: provenance.KindTransition, Subject: "task:t", From: "SUBMITTED", To: "COMPLETED"},
	)
	dup := strings.Replace(string(raw), `"to":"COMPLETED"`, `"to":"FAILED","to":"COMPLETED"`, 1)
	want := provenance.Expect{States: map[string]string{"task:t": "COMPLETED"}}
	if rep := provenance.Verify(raw, p.Keys(), want); !rep.Valid {
		t.Fatalf("as signed: %v", rep.Err())
	}
	if rep := provenance.Verify([]byte(dup), p.Keys(), want); rep.Valid {
		t.Errorf("a link with a repeated member verifies: %s", dup)
	}
	if rep := provenance.VerifyLinks([]byte(dup), p.Keys()); rep.Valid {
		t.Errorf("a fragment with a repeated member verifies: %s", dup)
	}
}
