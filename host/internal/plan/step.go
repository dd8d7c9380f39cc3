package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/store"
)

// errStale ends an update whose job no longer matches the record.
var errStale = errors.New("plan: job is stale")

// owns refuses (errStale) a change of step j.Step by the job with stream
// sequence seq unless the record names the job's execution, the plan is
// executing, and the step is queued or held by that job.
func owns(r *Record, j job, seq uint64) error {
	if r.ExecutionID != j.ExecutionID || r.Status != StatusExecuting || !r.consistent() {
		return errStale
	}
	switch st := r.Checkpoint.Steps[j.Step]; {
	case st.Status == StepQueued:
	case (st.Status == StepRunning || st.Status == StepRetrying) && st.Job == seq:
	default:
		return errStale
	}
	return nil
}

// runStep runs the job's step until it completes, fails for good, or the
// plan ends: each attempt waits for room (the plugin's, then one of this
// host's workers), is checkpointed as started, runs, and on a retryable
// failure waits out the backoff without holding a worker. When the step
// completes and makes a step ready that has room here at once, the job
// runs that one next (complete): the checkpoint that stores the output
// also records the next step's start, and no job is queued for it. The job
// stays unacknowledged meanwhile, so a crash hands it (and the step it
// then holds, Record.heldBy) to another runner as before.
func (m *Manager) runStep(ctx context.Context, msg *store.Job, j job, seq uint64, owner string, delivered int, log *slog.Logger) {
	ctx, stopEvents := m.withEventQueue(ctx)
	defer stopEvents()
	base, cancel := context.WithCancel(ctx)
	// Steps run as the plan's owner: its scopes are checked again at every
	// step (the registry does), so revoking a key stops its plans.
	sctx, ok := m.asOwner(base, owner)
	if !ok {
		cancel()
		m.fail(ctx, msg, j, fault.New(fault.Unauthorized, fault.ReasonInvalidCredentials,
			"the API key that owns this plan is no longer configured"), log)
		return
	}
	untrack := m.track(j.ExecutionID, j.Step, cancel)
	beats := m.heartbeat(base, cancel, msg, j)
	defer func() {
		cancel()
		<-beats
		untrack()
	}()
	var next *begun // the step complete began in place of queuing it
	jobLog := log
	for {
		out, rec, rev, attempt, runErr := m.attempt(sctx, j, seq, next)
		next = nil
		switch {
		case ctx.Err() != nil:
			m.handBack(ctx, j, seq, log) // shutting down: the step did not finish
			_ = msg.Nak()
			return
		case errors.Is(runErr, errStale), runErr != nil && sctx.Err() != nil:
			m.ack(ctx, msg, log) // the plan ended (or moved on) meanwhile
			return
		case runErr == nil:
			if next = m.complete(ctx, msg, j, seq, rec, rev, out, delivered == 1, log); next == nil {
				return
			}
			untrack()
			j.Step = next.step
			untrack = m.track(j.ExecutionID, j.Step, cancel)
			log = jobLog.With("held_step", j.Step)
			if sctx, ok = m.asOwner(base, owner); !ok {
				next.release()
				m.fail(ctx, msg, j, fault.New(fault.Unauthorized, fault.ReasonInvalidCredentials,
					"the API key that owns this plan is no longer configured"), log)
				return
			}
			continue
		}
		var se *storeError
		if errors.As(runErr, &se) {
			m.retry(ctx, msg, log, runErr)
			return
		}
		step := rec.Definition.Steps[j.Step]
		fe := fault.From(runErr)
		deadlinePassed := rec.Deadline != nil && !time.Now().Before(*rec.Deadline)
		if !retryable(runErr) || attempt >= step.attempts() || deadlinePassed {
			m.fail(ctx, msg, j, fe, log)
			return
		}
		wait := step.backoff(attempt)
		rec, err := m.recs.update(ctx, j.SessionID, j.PlanID, func(r *Record) error {
			if err := owns(r, j, seq); err != nil {
				return err
			}
			st := &r.Checkpoint.Steps[j.Step]
			st.Status, st.Error = StepRetrying, stepError(fe, attempt)
			st.Runs.End(m.st.Boot()) // the attempt ended: no crash can catch it now
			return nil
		})
		switch {
		case errors.Is(err, errStale):
			m.ack(ctx, msg, log)
			return
		case err != nil:
			m.retry(ctx, msg, log, err)
			return
		}
		data := fe.Summary().Map()
		data["backoff_ms"] = wait.Milliseconds()
		m.emit(ctx, rec, events.PlanStepRetrying, step.ID, attempt, data)
		log.Info("plan: step failed; retrying", "step_id", step.ID, "attempt", attempt, "reason", fe.WireReason(), "backoff", wait)
		select {
		case <-sctx.Done():
			continue // the next attempt sees why (shutdown or a stale plan)
		case <-time.After(wait):
		}
	}
}

// storeError is a failure to read or write the plan record: the job is
// handed back rather than the step failed.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// begun is a step whose start is checkpointed and which holds its room
// (the plugin's and a worker) until release.
type begun struct {
	step    int
	rec     *Record // as checkpointed with the start
	rev     uint64  // rec's revision
	release func()
}

// asOwner is ctx running as the plan owner's principal; false when the
// owner's key is no longer configured.
func (m *Manager) asOwner(ctx context.Context, owner string) (context.Context, bool) {
	if m.principals == nil {
		return ctx, true
	}
	who, ok := m.principals(owner)
	if !ok {
		return ctx, false
	}
	return auth.With(ctx, who), true
}

// begin waits for room for the job's step and checkpoints its start.
func (m *Manager) begin(ctx context.Context, j job, seq uint64) (*begun, *Record, error) {
	rec, _, err := m.recs.get(ctx, j.SessionID, j.PlanID)
	if err != nil {
		return nil, nil, &storeError{err}
	}
	if err := owns(rec, j, seq); err != nil {
		return nil, rec, err
	}
	call := m.stepCall(rec, j)
	release := func() {}
	if r, ok := m.exec.(Reserver); ok {
		if release, err = r.Reserve(ctx, call); err != nil {
			return nil, rec, err
		}
	}
	select {
	case m.workers <- struct{}{}:
	case <-ctx.Done():
		release()
		return nil, rec, ctx.Err()
	}
	held := func() { <-m.workers; release() }
	started, rev, err := m.recs.updateFrom(ctx, j.SessionID, j.PlanID, nil, 0, func(r *Record) error {
		if err := owns(r, j, seq); err != nil {
			return err
		}
		m.markStarted(r, j.Step, seq, time.Now().UTC())
		return nil
	})
	if err != nil {
		held()
		if errors.Is(err, errStale) {
			return nil, rec, errStale
		}
		return nil, rec, &storeError{err}
	}
	return &begun{step: j.Step, rec: started, rev: rev, release: held}, started, nil
}

// markStarted records in r the start of step i by the job with stream
// sequence seq on this host.
func (m *Manager) markStarted(r *Record, i int, seq uint64, now time.Time) {
	st := &r.Checkpoint.Steps[i]
	st.Status, st.Job, st.StartedAt, st.FinishedAt = StepRunning, seq, &now, nil
	st.Attempts++
	st.Runs.Start(m.st.Run(now)) // if this host dies now, the next start counts it
}

// attempt makes one attempt at the job's step, begun by complete (s) or
// here. It returns the outcome, the record as checkpointed at the
// attempt's start and the attempt number; errStale when the job may no
// longer run the step, a *storeError when the record could not be read or
// written.
func (m *Manager) attempt(ctx context.Context, j job, seq uint64, s *begun) (*StepOutcome, *Record, uint64, int, error) {
	if s == nil {
		var rec *Record
		var err error
		if s, rec, err = m.begin(ctx, j, seq); err != nil {
			return nil, rec, 0, 0, err
		}
	}
	defer s.release()
	rec, rev := s.rec, s.rev
	step := rec.Definition.Steps[j.Step]
	attempt := rec.Checkpoint.Steps[j.Step].Attempts
	m.emit(ctx, rec, events.PlanStepStarted, step.ID, attempt, nil)
	input, ferr := rec.Definition.resolveParams(j.Step, func(k int) json.RawMessage { return rec.Checkpoint.Steps[k].Output },
		rec.Input, int(m.cfg.MaxRecord))
	if ferr != nil {
		return nil, rec, rev, attempt, ferr
	}
	call := m.stepCall(rec, j)
	call.Input = input
	call.Progress = &stepProgress{m: m, ctx: ctx, rec: rec, step: step.ID, attempt: attempt}
	// the step runs as its session under its own request id (the principal,
	// the plan's owner, is attached by runStep)
	out, err := m.exec.RunStep(auth.Invoke(ctx, auth.Invocation{SessionID: call.SessionID, RequestID: call.RequestID}), call)
	if out != nil {
		out.Ended = time.Now().UTC() // while the step's room is still held
	}
	if err == nil && len(out.Output) > int(m.cfg.MaxRecord) {
		err = m.recs.tooLarge(len(out.Output)) // cannot fit the checkpoint: spare the encoding
	}
	return out, rec, rev, attempt, err
}

// stepProgress publishes a step's progress reports as plan events.
type stepProgress struct {
	m       *Manager
	ctx     context.Context
	rec     *Record
	step    string
	attempt int
}

// Progress implements hostfn.ProgressSink.
func (p *stepProgress) Progress(r hostfn.Progress) {
	data := map[string]any{"percent": r.Percent, "message": r.Message}
	if len(r.Data) > 0 {
		data["data"] = r.Data
	}
	p.m.emit(p.ctx, p.rec, events.PlanStepProgress, p.step, p.attempt, data)
}

// stepCall describes the job's step for the executor; its timeout is the
// smaller of the step's timeout_ms and the time left before the plan's.
func (m *Manager) stepCall(rec *Record, j job) StepCall {
	step := rec.Definition.Steps[j.Step]
	timeout := step.Timeout()
	if rec.Deadline != nil {
		if left := time.Until(*rec.Deadline); timeout == 0 || left < timeout {
			timeout = max(left, time.Millisecond)
		}
	}
	return StepCall{
		SessionID: j.SessionID, PlanID: j.PlanID, ExecutionID: j.ExecutionID, StepID: step.ID,
		Type: step.Type, Agent: step.Agent, Action: step.Action, Input: step.Params, Timeout: timeout,
		RequestID: j.ExecutionID + "/" + step.ID,
	}
}

// fail marks the job's execution failed with fe (unless it already ended),
// cancels its other steps and acknowledges msg.
func (m *Manager) fail(ctx context.Context, msg *store.Job, j job, fe *fault.Error, log *slog.Logger) {
	rec, err := m.recs.update(ctx, j.SessionID, j.PlanID, func(r *Record) error {
		if r.ExecutionID != j.ExecutionID || r.Status != StatusExecuting {
			return errStale
		}
		now := time.Now().UTC()
		r.Status, r.FinishedAt = StatusFailed, &now
		if !r.consistent() || j.Step < 0 || j.Step >= len(r.Definition.Steps) {
			r.Error = &StepError{Code: fe.Kind.Code(), Message: fe.Message(), Details: map[string]any{"reason": fe.WireReason()}}
			return nil
		}
		step := r.Definition.Steps[j.Step]
		st := &r.Checkpoint.Steps[j.Step]
		st.Status, st.FinishedAt, st.Error = StepFailed, &now, stepError(fe, st.Attempts)
		st.Runs.End(m.st.Boot())
		r.endActive(now)
		details := map[string]any{"step_id": step.ID, "step_index": j.Step, "reason": fe.WireReason(), "action": step.Action,
			"attempt": st.Attempts}
		if step.Agent != "" {
			details["agent"] = step.Agent
		}
		if boots, ok := fe.Data[crashedBoots]; ok {
			details[crashedBoots] = boots
		}
		r.Error = &StepError{Code: fe.Kind.Code(), Message: fmt.Sprintf("step %q failed: %s", step.ID, fe.Message()), Details: details}
		return nil
	})
	if errors.Is(err, errStale) {
		m.ack(ctx, msg, log)
		return
	}
	if err != nil {
		m.retry(ctx, msg, log, err)
		return
	}
	log.Info("plan: failed", "reason", fe.WireReason(), "err", fe.Message())
	if rec.consistent() && j.Step >= 0 && j.Step < len(rec.Definition.Steps) {
		st := rec.Checkpoint.Steps[j.Step]
		m.emit(ctx, rec, events.PlanStepFailed, rec.Definition.Steps[j.Step].ID, st.Attempts, fe.Summary().Map())
	}
	m.interrupt(j.ExecutionID)
	m.finished(ctx, rec)
	m.ack(ctx, msg, log)
}

// stepError is a step's failure as plan/status shows it.
func stepError(fe *fault.Error, attempt int) *StepError {
	details := map[string]any{"reason": fe.WireReason(), "attempt": attempt}
	if boots, ok := fe.Data[crashedBoots]; ok {
		details[crashedBoots] = boots
	}
	return &StepError{Code: fe.Kind.Code(), Message: fe.Message(), Details: details}
}

// finished reports an ended execution: the final event, and the webhook
// job when the plan has a webhook.
func (m *Manager) finished(ctx context.Context, rec *Record) {
	data := map[string]any{"status": rec.Status, "completed_steps": rec.Checkpoint.Completed(), "total_steps": len(rec.Definition.Steps)}
	if rec.Error != nil {
		data["error"] = rec.Error
	}
	typ := map[string]string{StatusCompleted: events.PlanCompleted, StatusFailed: events.PlanFailed, StatusCancelled: events.PlanCancelled}[rec.Status]
	m.emit(ctx, rec, typ, "", 0, data)
	if err := m.enqueue(ctx, rec); err != nil {
		// A later delivery of any of the execution's jobs enqueues it again.
		m.log.Warn("plan: queuing the webhook failed", "plan_id", rec.PlanID, "err", err)
	}
}
