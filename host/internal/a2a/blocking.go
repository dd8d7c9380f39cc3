package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// run executes one turn of rec's skill with input under ctx, reporting
// progress as task events, and returns what the skill asked for if it
// ended its turn asking (task_interrupt; nil otherwise) and the peer
// results of the skill's agent_calls that remote peers answered (with
// provenance). A cancel (CancelTask, shutdown) is reported as its cause.
func (s *Service) run(ctx context.Context, rec *Record, input json.RawMessage, reqID string) (*plugin.Outcome, *hostfn.Interrupt, []*provenance.PeerResult, error) {
	task := rec.Task
	// the task's turn runs under the request id it was started with (an
	// A2A request carries no session: Session opens the context's)
	inv := auth.InvocationFrom(ctx)
	inv.RequestID = reqID
	ctx = auth.Invoke(ctx, inv)
	turn := taskTurn(rec)
	call := &hostfn.Call{Plugin: rec.Plugin, Skill: rec.SkillID, Task: turn,
		Progress: &taskProgress{s: s, ctx: context.WithoutCancel(ctx), task: task}}
	if s.cfg.Tasks.prov != nil {
		call.Delegations = &hostfn.Delegations{}
	}
	if c := s.cfg.Contexts; c != nil { // the context's session, created when the skill first uses it
		call.Session = contextSession{c: c, contextID: task.ContextID}
	}
	out, err := s.cfg.Executor.Execute(hostfn.WithCall(ctx, call), plugin.Call{SkillID: rec.SkillID, Input: input,
		FollowUp: turn.Turn > 1, Turn: turn})
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause // canceled by CancelTask or shutdown: report why
	}
	var peers []*provenance.PeerResult
	if call.Delegations != nil {
		peers = call.Delegations.List()
	}
	return out, turn.Interrupted(), peers, err
}

// taskProgress publishes a task's progress reports as working status
// events (hostfn.ProgressSink).
type taskProgress struct {
	s    *Service
	ctx  context.Context
	task *a2av1.Task
}

// Progress implements hostfn.ProgressSink.
func (t *taskProgress) Progress(p hostfn.Progress) {
	parts := []*a2av1.Part{a2av1.NewTextPart(p.Message)}
	data := map[string]any{"percent": p.Percent}
	if len(p.Data) > 0 {
		data["data"] = p.Data
	}
	parts = append(parts, a2av1.NewDataPart(data))
	ev := a2av1.NewStatusUpdateEvent(t.task, a2av1.TaskStateWorking, a2av1.NewMessageForTask(a2av1.MessageRoleAgent, t.task, parts...))
	if err := t.s.events.publish(t.ctx, t.task.ID, event{ev: ev, progress: true}); err != nil {
		t.s.log.Debug("a2a: progress event not published", "task_id", t.task.ID, "err", err)
	}
}

// contextSession opens the session of an A2A context as the principal on
// ctx (hostfn.SessionOpener).
type contextSession struct {
	c         *Contexts
	contextID string
}

// OpenSession implements hostfn.SessionOpener.
func (cs contextSession) OpenSession(ctx context.Context) (string, error) {
	who := auth.From(ctx)
	return cs.c.session(ctx, who, cs.contextID, who.Limits().MaxOpenSessions)
}

// artifactOf is the output artifact of a successful call.
func artifactOf(rec *Record, out *plugin.Outcome) *a2av1.Artifact {
	return &a2av1.Artifact{ID: a2av1.NewArtifactID(), Name: "output", Description: "output of skill " + rec.SkillID,
		Parts:    a2av1.ContentParts{outputPart(out.Output)},
		Metadata: map[string]any{"duration_ms": out.Duration.Milliseconds(), "plugin": out.Plugin}}
}

// executeBlocking runs a blocking SendMessage's task (see live.go): the
// skill, then its terminal record stored once, durably, unless a CancelTask
// stored it first. r.final or r.err is set before the run ends.
func (s *Service) executeBlocking(ctx context.Context, r *run, rec *Record, input json.RawMessage, reqID string) {
	task := rec.Task
	defer s.finish(task.ID, r)
	sctx := context.WithoutCancel(ctx) // stores the outcome even after a cancel
	out, ask, peers, err := s.run(ctx, rec, input, reqID)
	handed, err := s.afterRun(rec, true, err)
	if handed { // another host ends it or runs it again
		r.err = err
		return
	}
	now := time.Now().UTC()
	var pre a2av1.Event
	known := len(task.Artifacts)
	switch {
	case err != nil:
		task.Status = a2av1.TaskStatus{State: StateForError(err).Wire(), Message: errorMessage(task, err), Timestamp: &now}
	case ask != nil: // stored interrupted: the follow-up finds it (turns.go)
		endTurn(rec, ask)
		task.Status.State, task.Status.Timestamp = interruptState(ask).Wire(), &now
	default:
		art := artifactOf(rec, out)
		task.Artifacts = append(task.Artifacts, art)
		task.Status = a2av1.TaskStatus{State: a2av1.TaskStateCompleted, Timestamp: &now}
		pre = &a2av1.TaskArtifactUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Artifact: art, LastChunk: true}
	}
	rec.note.peers = peers
	if r.err = s.cfg.Tasks.signMove(rec, StateWorking, known); r.err != nil {
		s.log.Error("a2a: task provenance not signed", "task_id", task.ID, "err", r.err)
		return
	}
	r.final, _, r.err = s.storeFinal(sctx, rec, pre)
}

// storeFinal stores a live task's terminal record and publishes its last
// events, unless the task was stored first by the other side of a cancel
// race (won false), whose record is then returned. The live record is
// dropped either way.
func (s *Service) storeFinal(ctx context.Context, rec *Record, pre a2av1.Event) (stored *Record, won bool, err error) {
	stored, won, err = s.createFinal(ctx, rec)
	if err != nil {
		s.log.Error("a2a: task not stored", "task_id", rec.Task.ID, "state", rec.State(), "err", err)
		return nil, false, err
	}
	s.cfg.Tasks.dropLive(rec.Owner, rec.Task.ID)
	s.lease.settle(rec.Task.ID)
	if won {
		// After the record is stored: a subscriber whose snapshot is older
		// reads these; one whose snapshot is the stored task needs none.
		// Not waited for: the reply does not depend on them, and they follow
		// any progress event on the same connection.
		final := &a2av1.TaskStatusUpdateEvent{TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Status: stored.Task.Status}
		withLinks(rec, pre, final)
		if pre != nil {
			s.events.publishAsync(rec.Task.ID, event{ev: pre})
		}
		s.events.publishAsync(rec.Task.ID, event{ev: final, final: true})
		s.notifyPush(ctx, rec.Owner, rec.Task.ID, pre, final)
	}
	return stored, won, nil
}

// cancelLive ends a task that a blocking SendMessage runs (live, on this
// host or another) as canceled: the canceled record is stored unless the
// task ended first (then -32002), and the running host is told to stop.
func (s *Service) cancelLive(ctx context.Context, rec *Record, cause *fault.Error) (*a2av1.Task, error) {
	now := time.Now().UTC()
	from := rec.State()
	rec.Task.Status = a2av1.TaskStatus{State: StateCanceled.Wire(), Message: errorMessage(rec.Task, cause), Timestamp: &now}
	rec.note = note{actor: auth.From(ctx).Owner()}
	if err := s.cfg.Tasks.signMove(rec, from, len(rec.Task.Artifacts)); err != nil {
		return nil, err
	}
	stored, won, err := s.storeFinal(ctx, rec, nil)
	if err != nil {
		return nil, err
	}
	if !won && !stored.State().IsTerminal() { // its turn ended first, asking for input: stored interrupted
		return s.cancelStored(ctx, rec.Task.ID, cause)
	}
	if !won {
		return nil, stored.State().CanTransition(StateCanceled) // it ended first
	}
	s.stop(rec.Task.ID, cause)
	return stored.Task, nil
}

// stop stops a task's sandbox call here, or tells its host over NATS.
func (s *Service) stop(id a2av1.TaskID, cause *fault.Error) {
	s.mu.Lock()
	r := s.running[id]
	s.mu.Unlock()
	if r != nil {
		r.cancel(cause)
	} else if err := s.events.st.Signal(CancelSubject + string(id)); err != nil {
		// The task is canceled in the store either way; its host stops the
		// call when the message arrives, or at the call's deadline.
		s.log.Warn("a2a: cancel not sent to the task's host", "task_id", id, "err", err)
	}
}
