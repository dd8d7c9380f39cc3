package plan

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/store"
)

// complete checkpoints the step's output, queues the steps it made ready
// (or completes the plan), publishes their jobs and acknowledges msg.
// With chain (the job's first delivery), the first step it makes ready
// that has room here at once is started in the same checkpoint instead of
// queued, and returned: the caller runs it under msg.
func (m *Manager) complete(ctx context.Context, msg *store.Job, j job, seq uint64, started *Record, rev uint64, out *StepOutcome, chain bool, log *slog.Logger) *begun {
	g := started.Definition.graph()
	var next *begun
	if chain {
		next = m.reserveNext(ctx, started, j, g)
	}
	inline := false
	stepID := started.Definition.Steps[j.Step].ID
	// started is this runner's own last write: not read again (it is
	// changed in place) unless the record changed since.
	rec, rev, err := m.recs.updateFrom(ctx, j.SessionID, j.PlanID, started, rev, func(r *Record) error {
		if err := owns(r, j, seq); err != nil {
			return err
		}
		now, ended := time.Now().UTC(), out.Ended
		if ended.IsZero() {
			ended = now
		}
		st := &r.Checkpoint.Steps[j.Step]
		st.Status, st.Output, st.FinishedAt, st.Error, st.Peer = StepCompleted, outputValue(out.Output), &ended, nil, out.Peer
		st.Runs.End(m.st.Boot())
		inline = false
		if r.allCompleted() {
			r.Status, r.FinishedAt = StatusCompleted, &now
		} else {
			r.queueReady(g)
			if next != nil && r.Checkpoint.Steps[next.step].Status == StepQueued {
				m.markStarted(r, next.step, seq, now)
				inline = true
			}
		}
		return nil
	})
	if next != nil && (err != nil || !inline) {
		next.release()
		next = nil
	}
	var fe *fault.Error
	switch {
	case errors.Is(err, errStale):
		m.ack(ctx, msg, log) // cancelled or failed meanwhile
		return nil
	case errors.As(err, &fe) && fe.Kind == fault.ResourceExhausted:
		m.fail(ctx, msg, j, fe, log) // the output does not fit the checkpoint
		return nil
	case err != nil:
		m.retry(ctx, msg, log, err) // the step runs again: its output was not checkpointed
		return nil
	}
	st := rec.Checkpoint.Steps[j.Step]
	m.emit(ctx, rec, events.PlanStepCompleted, stepID, st.Attempts,
		map[string]any{"duration_ms": out.Duration.Milliseconds()})
	switch {
	case rec.Status != StatusExecuting:
		m.finished(ctx, rec)
		m.ack(ctx, msg, log)
		return nil
	case next == nil:
		m.advance(ctx, msg, rec, log)
		return nil
	}
	if len(rec.withStatus(StepQueued)) > 0 {
		// Steps made ready besides the one run here (a parallel plan).
		// A failure is repaired by the advance that ends this job.
		if err := m.enqueue(ctx, rec); err != nil {
			log.Warn("plan: queuing ready steps failed; retried when this job ends", "err", err)
		}
	}
	next.rec, next.rev = rec, rev
	return next
}

// reserveNext takes room, if there is some at once, for the first step
// that the completion of the job's step makes ready (as queueReady would
// queue it), unless the plan's deadline has passed (start fails it then).
func (m *Manager) reserveNext(ctx context.Context, started *Record, j job, g graph) *begun {
	if started.Deadline != nil && !time.Now().Before(*started.Deadline) {
		return nil
	}
	r := *started
	r.Checkpoint.Steps = slices.Clone(started.Checkpoint.Steps)
	r.Checkpoint.Steps[j.Step].Status = StepCompleted
	ready := r.queueReady(g)
	if len(ready) == 0 {
		return nil
	}
	next := j
	next.Step = ready[0]
	call := m.stepCall(&r, next)
	release := func() {}
	if res, ok := m.exec.(Reserver); ok {
		now, cancel := context.WithCancel(ctx)
		cancel() // room free at once, or none (see Reserver)
		var err error
		if release, err = res.Reserve(now, call); err != nil {
			return nil
		}
	}
	select {
	case m.workers <- struct{}{}:
	default:
		release()
		return nil
	}
	return &begun{step: next.Step, release: func() { <-m.workers; release() }}
}
