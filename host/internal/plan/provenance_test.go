package plan

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// peerExecutor runs steps locally and, for agent steps, reports the result
// as a remote peer's (what a remote-agent executor does).
type peerExecutor struct{ local *LocalExecutor }

func (p peerExecutor) RunStep(ctx context.Context, c StepCall) (*StepOutcome, error) {
	out, err := p.local.RunStep(ctx, c)
	if err != nil || c.Type != TypeAgent {
		return out, err
	}
	d, _ := provenance.Digest(json.RawMessage(out.Output))
	out.Peer = &provenance.PeerResult{Agent: "billing", URL: "https://billing.example", TaskID: "t-1", State: "TASK_STATE_COMPLETED",
		ResultHash: d, Head: "sha256:00", HeadSigs: []string{"eyJ..sig"}}
	return out, nil
}

func mustProvenanceSigner(t *testing.T) *provenance.Signer {
	t.Helper()
	k, err := identity.Generate(identity.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	s, err := identity.NewSigner([]*identity.PrivateKey{k}, "")
	if err != nil {
		t.Fatal(err)
	}
	return provenance.NewSigner(s, "skillhost")
}

// A completed plan's chain records every plan and step transition, each
// step output and the peer's result, and verifies; an edit of the stored
// chain is named by plan/verify.
func TestPlanProvenance(t *testing.T) {
	t.Parallel()
	signer := mustProvenanceSigner(t)
	e := mustEnv(t, "", Config{}, func(d *Deps) {
		d.Provenance = signer
		d.Executor = peerExecutor{NewLocalExecutor(d.Skills)}
	})
	sess := mustSession(t, e)
	def := definition(
		step("fetch", "echo", `{"text":"hello"}`),
		map[string]any{"id": "ask", "type": "agent", "agent": "hostile", "action": "echo", "params": json.RawMessage(`{"text":"HELLO"}`)},
	)
	mustCreate(t, e, sess, "p1", def)
	mustExecute(t, e, sess, "p1", ExecuteOptions{})
	if st := waitFor(t, e, sess, "p1", "completion", finished); st.Status != StatusCompleted {
		t.Fatalf("plan %s", st.Status)
	}
	rec := mustRecord(t, e, sess, "p1")
	var c provenance.Chain
	if err := json.Unmarshal(rec.Provenance, &c); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range c.Links {
		s := l.Kind + " " + strings.TrimPrefix(l.Subject, "plan:p1")
		if l.Kind == provenance.KindTransition {
			s += " " + l.From + ">" + l.To
		}
		got = append(got, s)
	}
	want := []string{
		"transition  >created", "transition  created>executing",
		"transition /step:fetch pending>queued", "transition /step:fetch queued>running",
		"artifact /step:fetch", "transition /step:fetch running>completed", "transition /step:ask pending>queued",
		"transition /step:ask queued>running",
		"peer /step:ask", "artifact /step:ask", "transition /step:ask running>completed", "transition  executing>completed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
	verify := func() VerifyResult {
		t.Helper()
		res, err := e.m.verify(localCtx(), mustRequest(t, map[string]any{"session_id": sess, "plan_id": "p1"}))
		if err != nil {
			t.Fatal(err)
		}
		return res.(VerifyResult)
	}
	if vr := verify(); !vr.Valid || vr.Links != len(want) {
		t.Fatalf("plan/verify: %+v (%v)", vr, vr.Err())
	}

	// Edit the stored record: step fetch's running>completed link says failed.
	kv, err := e.st.KeyValue(localCtx(), jetstream.KeyValueConfig{Bucket: Bucket})
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(localCtx(), key(sess, "p1"))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(entry.Value()), `"from":"running","to":"completed"`, `"from":"running","to":"failed"`, 1)
	if _, err := kv.Put(localCtx(), key(sess, "p1"), []byte(edited)); err != nil {
		t.Fatal(err)
	}
	vr := verify()
	if vr.Valid || vr.Failure == nil || vr.Failure.Link != 5 || vr.Failure.Subject != "plan:p1/step:fetch" {
		t.Errorf("edited link not named: %+v", vr.Failure)
	}
}

func mustRequest(t *testing.T, params any) *jsonrpc.Request {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	return &jsonrpc.Request{Method: VerifyMethod, Params: b}
}
