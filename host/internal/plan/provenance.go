package plan

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// VerifyMethod verifies a plan's provenance chain.
const VerifyMethod = "_cleveragents/plan/verify"

// planSubject and stepSubject are the subjects of a plan's links.
func planSubject(planID string) string         { return "plan:" + planID }
func stepSubject(planID, stepID string) string { return "plan:" + planID + "/step:" + stepID }

// shape is what a record's provenance follows: the plan's status and each
// step's status, output and peer result.
type shape struct {
	status string
	steps  []StepState
}

func shapeOf(rec *Record) shape {
	if rec == nil {
		return shape{}
	}
	return shape{status: rec.Status, steps: append([]StepState(nil), rec.Checkpoint.Steps...)}
}

// seal appends to rec's chain a signed link for every change from before
// to rec: the plan's status, each step's status (a step starts pending: its
// first link leaves pending), each step output that appeared (an artifact
// link with its digest), each peer result recorded. Nothing without a
// signer. It runs in the update that writes rec, so it costs no write.
func (r *records) seal(before shape, rec *Record) error {
	if r.prov == nil {
		return nil
	}
	c := &provenance.Chain{}
	if len(rec.Provenance) > 0 {
		if err := json.Unmarshal(rec.Provenance, c); err != nil {
			return fmt.Errorf("plan: provenance of %s: %w", rec.PlanID, err)
		}
	}
	n := c.Len()
	add := func(l provenance.Link) error { return r.prov.Append(c, l) }
	planMove := func() error {
		if before.status == rec.Status {
			return nil
		}
		l := provenance.Link{Kind: provenance.KindTransition, Subject: planSubject(rec.PlanID), From: before.status, To: rec.Status}
		if before.status == "" {
			l.Facts = map[string]string{"session_id": rec.SessionID}
			if d, err := provenance.Digest(rec.Definition); err == nil {
				l.Facts["definition_sha256"] = d
			}
		}
		if rec.Error != nil {
			l.Reason = reasonOf(rec.Error)
		}
		return add(l)
	}
	// The plan's move comes first, unless it ends the plan: then it follows
	// the step moves that ended it.
	ends := rec.Status == StatusCompleted || rec.Status == StatusFailed || rec.Status == StatusCancelled
	if !ends {
		if err := planMove(); err != nil {
			return err
		}
	}
	fresh := len(before.steps) != len(rec.Checkpoint.Steps)
	for i, st := range rec.Checkpoint.Steps {
		if i >= len(rec.Definition.Steps) {
			break
		}
		subject := stepSubject(rec.PlanID, rec.Definition.Steps[i].ID)
		prev := StepState{Status: StepPending}
		if !fresh {
			prev = before.steps[i]
		}
		if st.Peer != nil && st.Peer.ResultHash != "" && (prev.Peer == nil || prev.Peer.ResultHash != st.Peer.ResultHash || st.Status != prev.Status) {
			p := *st.Peer
			p.HeadSigs = append([]string(nil), st.Peer.HeadSigs...)
			if err := add(provenance.Link{Kind: provenance.KindPeer, Subject: subject, Peer: &p}); err != nil {
				return err
			}
		}
		if st.Status != prev.Status {
			if st.Status == StepCompleted && len(st.Output) > 0 {
				d, err := provenance.Digest(st.Output)
				if err != nil {
					return err
				}
				if err := add(provenance.Link{Kind: provenance.KindArtifact, Subject: subject,
					Artifact: &provenance.ArtifactRef{ID: "step:" + rec.Definition.Steps[i].ID, Name: "output", SHA256: d}}); err != nil {
					return err
				}
			}
			if prev.Status == StepPending && st.Status == StepRunning {
				// Queued and started in one write (runStep runs a step it made
				// ready): the chain records both moves, as when its job ran it.
				if err := add(provenance.Link{Kind: provenance.KindTransition, Subject: subject, From: StepPending, To: StepQueued}); err != nil {
					return err
				}
				prev.Status = StepQueued
			}
			l := provenance.Link{Kind: provenance.KindTransition, Subject: subject, From: prev.Status, To: st.Status}
			if st.Error != nil && st.Error != prev.Error {
				l.Reason = reasonOf(st.Error)
			}
			if err := add(l); err != nil {
				return err
			}
		}
	}
	if ends {
		if err := planMove(); err != nil {
			return err
		}
	}
	if c.Len() == n {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("plan: encode provenance: %w", err)
	}
	rec.Provenance = b
	return nil
}

func reasonOf(e *StepError) string {
	if r, ok := e.Details["reason"].(string); ok {
		return r
	}
	return ""
}

// expect is what a plan record's chain must agree with.
func expect(rec *Record) provenance.Expect {
	want := provenance.Expect{States: map[string]string{planSubject(rec.PlanID): rec.Status}, Artifacts: map[string]string{},
		Facts: map[string]string{"session_id": rec.SessionID}}
	if d, err := provenance.Digest(rec.Definition); err == nil {
		want.Facts["definition_sha256"] = d
	}
	for i, st := range rec.Checkpoint.Steps {
		if i >= len(rec.Definition.Steps) {
			break
		}
		id := rec.Definition.Steps[i].ID
		if st.Status != StepPending {
			want.States[stepSubject(rec.PlanID, id)] = st.Status
		}
		if st.Status == StepCompleted && len(st.Output) > 0 {
			if d, err := provenance.Digest(st.Output); err == nil {
				want.Artifacts["step:"+id] = d
			}
		}
	}
	return want
}

// verifyParams are the params of _cleveragents/plan/verify.
type verifyParams struct {
	SessionID string `json:"session_id"`
	PlanID    string `json:"plan_id"`
}

// VerifyResult is the result of _cleveragents/plan/verify.
type VerifyResult struct {
	PlanID string `json:"plan_id"`
	provenance.Report
}

// verify answers _cleveragents/plan/verify: the plan's chain checked
// against this host's keys and the stored record (statuses, outputs).
func (m *Manager) verify(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p verifyParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if p.PlanID == "" {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "plan_id is required")
	}
	rec, err := m.Status(ctx, p.SessionID, p.PlanID)
	if err != nil {
		return nil, err
	}
	if len(rec.Provenance) == 0 {
		return VerifyResult{PlanID: rec.PlanID, Report: provenance.Report{Failure: &provenance.Failure{Link: -1,
			Reason: "the plan has no provenance; was the host configured with identity.key_file?"}}}, nil
	}
	return VerifyResult{PlanID: rec.PlanID, Report: provenance.Verify(rec.Provenance, m.recs.prov.Keys(), expect(rec))}, nil
}
