package a2a

import (
	"context"
	"encoding/json"
	"fmt"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// ExtProvenance is the extension under which a task's metadata carries its
// signed provenance chain (provenance.ExtURI).
const ExtProvenance = provenance.ExtURI

// VerifyMethod verifies a task's provenance chain.
const VerifyMethod = "_cleveragents/task/verify"

// note says who caused a record's next transition and why; set by the
// code that changes the record, read when the transition is signed.
type note struct {
	actor  string
	reason string
	facts  map[string]string        // bound into the transition (a follow-up's input digest)
	peers  []*provenance.PeerResult // remote answers of the skill's agent_calls, recorded before the move
}

// chainOf is rec's provenance chain (nil when the task has none).
func chainOf(rec *Record) *provenance.Chain {
	c, err := provenance.FromMetadata(rec.Task.Metadata)
	if err != nil || c == nil {
		return nil
	}
	return c
}

// sign appends links to rec's chain (creating it) and stores the chain in
// the task's metadata. Without a signer it does nothing.
func (s *TaskStore) sign(rec *Record, links ...provenance.Link) error {
	if s.prov == nil {
		return nil
	}
	c := chainOf(rec)
	if c == nil {
		c = &provenance.Chain{}
	}
	start := c.Len()
	for _, l := range links {
		if l.Subject == "" {
			l.Subject = provenance.TaskSubject(string(rec.Task.ID))
		}
		if err := s.prov.Append(c, l); err != nil {
			return err
		}
	}
	rec.signed = c.Links[start:]
	if rec.Task.Metadata == nil {
		rec.Task.Metadata = map[string]any{}
	}
	rec.Task.Metadata[ExtProvenance] = c
	return nil
}

// signCreated records a new task's first transition (created → submitted),
// bound to its context, skill, plugin and input message.
func (s *TaskStore) signCreated(rec *Record, actor string) error {
	if s.prov == nil {
		return nil
	}
	facts := map[string]string{provenance.FactContextID: rec.Task.ContextID, provenance.FactSkill: rec.SkillID, provenance.FactPlugin: rec.Plugin}
	if len(rec.Task.History) > 0 {
		if d, err := provenance.Digest(rec.Task.History[0]); err == nil {
			facts[provenance.FactInput] = d
		}
	}
	return s.sign(rec, provenance.Link{Kind: provenance.KindTransition, To: string(StateSubmitted), Actor: actor, Facts: facts,
		At: rec.Task.Status.Timestamp.UTC()})
}

// signMove records rec's move from state from to its current state, after
// links for the remote peers its skill delegated to (rec.note.peers) and
// the artifacts it gained since it had known artifacts.
func (s *TaskStore) signMove(rec *Record, from TaskState, known int) error {
	if s.prov == nil {
		return nil
	}
	var links []provenance.Link
	for _, p := range rec.note.peers {
		links = append(links, provenance.Link{Kind: provenance.KindPeer, Peer: p})
	}
	for _, a := range rec.Task.Artifacts[min(known, len(rec.Task.Artifacts)):] {
		d, err := provenance.Digest(a)
		if err != nil {
			return err
		}
		links = append(links, provenance.Link{Kind: provenance.KindArtifact, Artifact: &provenance.ArtifactRef{ID: string(a.ID), Name: a.Name, SHA256: d}})
	}
	n := rec.note
	rec.note = note{}
	if n.reason == "" && rec.Task.Status.Message != nil {
		if r, ok := rec.Task.Status.Message.Metadata["reason"].(string); ok {
			n.reason = r
		}
	}
	links = append(links, provenance.Link{Kind: provenance.KindTransition, From: string(from), To: string(rec.State()),
		Actor: n.actor, Reason: n.reason, Facts: n.facts})
	return s.sign(rec, links...)
}

// withLinks puts in each event's metadata (under ExtProvenance, as a
// {"links": […]} chain fragment) the links of rec's latest move that the
// event reports: the transition for a status event, the artifact's link for
// an artifact event. So every streamed or pushed transition and artifact
// carries its signatures, verifiable against the host's JWKS and, by prev,
// as the continuation of the task's chain. Nothing without provenance.
func withLinks(rec *Record, evs ...a2av1.Event) {
	for _, ev := range evs {
		var meta *map[string]any
		var picked []provenance.Link
		for _, l := range rec.signed {
			switch e := ev.(type) {
			case *a2av1.TaskStatusUpdateEvent:
				if l.Kind == provenance.KindTransition {
					picked, meta = append(picked, l), &e.Metadata
				}
			case *a2av1.TaskArtifactUpdateEvent:
				if l.Kind == provenance.KindArtifact && e.Artifact != nil && l.Artifact.ID == string(e.Artifact.ID) {
					picked, meta = append(picked, l), &e.Metadata
				}
			}
		}
		if len(picked) == 0 {
			continue
		}
		if *meta == nil {
			*meta = map[string]any{}
		}
		(*meta)[ExtProvenance] = provenance.Chain{Links: picked}
	}
}

// resignFailed replaces the end of rec's chain (its artifacts and final
// transition, which could not be stored: the record was too large) by a
// move from its last stored state to rec's state (failed).
func (s *TaskStore) resignFailed(rec *Record) error {
	c := chainOf(rec)
	if c == nil {
		return nil
	}
	c.DropFinal(func(state string) bool { return TaskState(state).IsTerminal() })
	rec.Task.Metadata[ExtProvenance] = c
	return s.signMove(rec, TaskState(c.State()), 0)
}

// Verify verifies the provenance of the task JSON task (v1.0, as GetTask
// returns it) against this host's keys. Without keys every task is
// unverifiable.
func (s *TaskStore) Verify(task []byte) provenance.Report {
	return provenance.VerifyTask(task, s.prov.Keys())
}

// verifyParams are the params of _cleveragents/task/verify: a task id (one
// of the caller's tasks) or a task (v1.0 JSON).
type verifyParams struct {
	ID   string          `json:"id"`
	Task json.RawMessage `json:"task"`
}

// VerifyResult is the result of _cleveragents/task/verify.
type VerifyResult struct {
	TaskID string `json:"task_id"`
	provenance.Report
}

// verify answers _cleveragents/task/verify.
func (s *Service) verify(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p verifyParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if (p.ID == "") == (len(p.Task) == 0) {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "give either id (one of your tasks) or task (a task's v1.0 JSON)")
	}
	body := []byte(p.Task)
	id := p.ID
	if id != "" {
		rec, _, err := s.owned(ctx, a2av1.TaskID(id), "")
		if err != nil {
			return nil, err
		}
		if body, err = json.Marshal(rec.Task); err != nil {
			return nil, fmt.Errorf("a2a: encode task: %w", err)
		}
	} else {
		var t struct {
			ID string `json:"id"`
		}
		_ = identity.Decode(body, &t)
		id = t.ID
	}
	return VerifyResult{TaskID: truncate(id, MaxTaskIDLen), Report: s.cfg.Tasks.Verify(body)}, nil
}
