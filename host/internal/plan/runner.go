package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

const (
	pollWait   = 2 * time.Second        // one pull's wait for a job
	retryDelay = time.Second            // redelivery delay after a store hiccup
	startGrace = 10 * time.Second       // how long a job may precede its execution's record
	startRetry = 250 * time.Millisecond // redelivery delay while waiting for that record
)

// job is one step job on the work queue: "run step Step of this execution".
type job struct {
	SessionID   string `json:"session_id"`
	PlanID      string `json:"plan_id"`
	ExecutionID string `json:"execution_id"`
	Step        int    `json:"step"`
}

// publish enqueues j. The message id makes a re-publish after a crash
// (checkpoint written, job not yet acknowledged) a no-op within the stream's
// duplicate window.
func (m *Manager) publish(ctx context.Context, j job) error {
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("plan: encode job: %w", err)
	}
	_, err = m.js.Publish(ctx, SubjectBase+"."+j.ExecutionID, b, jetstream.WithMsgID(j.ExecutionID+":"+strconv.Itoa(j.Step)))
	if err != nil {
		return storeErr(err, "enqueue step")
	}
	return nil
}

// Run executes step jobs with cfg.Workers workers until ctx ends. Jobs left
// unacknowledged by a crash are redelivered after AckWait, so plans resume
// from their checkpoint; on ctx's end the running steps are interrupted and
// their jobs handed back at once (to another host, or to the next start).
// Run may be called once per Manager.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("plan: Run called twice")
	}
	var wg sync.WaitGroup
	for range m.cfg.Workers {
		wg.Go(func() { m.work(ctx) })
	}
	wg.Wait()
	return nil
}

func (m *Manager) work(ctx context.Context) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, pollWait)
		msg, err := m.cons.Next(jetstream.FetchContext(fctx))
		cancel()
		switch {
		case ctx.Err() != nil:
			if msg != nil {
				_ = msg.Nak()
			}
			return
		case err == nil:
			m.handle(ctx, msg)
		case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, jetstream.ErrNoMessages):
		default:
			m.log.Warn("plan: fetching step jobs failed; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(retryDelay):
			}
		}
	}
}

// handle processes one delivery of a job. Every path acknowledges,
// negatively acknowledges or terminates the message.
func (m *Manager) handle(ctx context.Context, msg jetstream.Msg) {
	var j job
	meta, merr := msg.Metadata()
	if err := json.Unmarshal(msg.Data(), &j); err != nil || merr != nil || j.ExecutionID == "" {
		m.log.Error("plan: dropping a malformed step job", "subject", msg.Subject())
		_ = msg.Term()
		return
	}
	log := m.log.With("plan_id", j.PlanID, "session_id", j.SessionID, "execution_id", j.ExecutionID, "step", j.Step)
	rec, _, err := m.recs.get(ctx, j.SessionID, j.PlanID)
	if errors.Is(err, fault.ErrPlanNotFound) {
		m.ack(ctx, msg, log) // the plan expired
		return
	}
	if err != nil {
		m.retry(msg, log, err)
		return
	}
	if rec.ExecutionID != j.ExecutionID {
		if rec, err = m.awaitExecution(ctx, rec, j, meta.Timestamp); err != nil {
			m.retry(msg, log, err)
			return
		}
	}
	if rec == nil {
		_ = msg.NakWithDelay(startRetry) // its execution is not recorded yet
		return
	}
	if rec.ExecutionID != j.ExecutionID {
		m.ack(ctx, msg, log) // stale: an older execution's job
		return
	}
	done := rec.Checkpoint.Completed()
	switch {
	case rec.Status != StatusExecuting, j.Step > done:
		m.ack(ctx, msg, log)
	case j.Step < done:
		// Checkpointed before a crash: only the next job may be missing.
		m.advance(ctx, msg, rec, log)
	case int(meta.NumDelivered) >= m.cfg.MaxDeliver:
		m.fail(ctx, msg, j, fault.Newf(fault.ResourceExhausted, fault.ReasonRedeliveryExhausted,
			"step %q was handed out %d times without finishing (the host running it stopped each time)",
			rec.Definition.Steps[j.Step].ID, meta.NumDelivered), log)
	case rec.Deadline != nil && !time.Now().Before(*rec.Deadline):
		m.fail(ctx, msg, j, fault.New(fault.Timeout, fault.ReasonTimeout, "the plan's execution timeout passed"), log)
	default:
		m.runStep(ctx, msg, j, log)
	}
}

// awaitExecution handles a job whose execution the record does not name.
// Execute publishes the first job just before it records the execution, so
// a young job whose record predates it is waited for briefly: it returns the
// record once it names the job's execution, nil to retry later, or rec
// unchanged when the job is stale (an older execution's).
func (m *Manager) awaitExecution(ctx context.Context, rec *Record, j job, published time.Time) (*Record, error) {
	pending := func(r *Record) bool {
		return r.ExecutionID != j.ExecutionID && (r.StartedAt == nil || r.StartedAt.Before(published)) && time.Since(published) < startGrace
	}
	for wait := 2 * time.Millisecond; pending(rec); wait *= 2 {
		if wait > 256*time.Millisecond {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		var err error
		if rec, _, err = m.recs.get(ctx, j.SessionID, j.PlanID); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// errStale ends an update whose job no longer matches the record.
var errStale = errors.New("plan: job is stale")

// runStep runs the job's step, checkpoints its output and enqueues the next.
func (m *Manager) runStep(ctx context.Context, msg jetstream.Msg, j job, log *slog.Logger) {
	current := func(r *Record) error {
		if r.ExecutionID != j.ExecutionID || r.Status != StatusExecuting || r.Checkpoint.Completed() != j.Step {
			return errStale
		}
		return nil
	}
	rec, err := m.recs.update(ctx, j.SessionID, j.PlanID, func(r *Record) error {
		if err := current(r); err != nil {
			return err
		}
		r.Checkpoint.Attempts[j.Step]++
		return nil
	})
	if errors.Is(err, errStale) {
		m.ack(ctx, msg, log)
		return
	}
	if err != nil {
		m.retry(msg, log, err)
		return
	}
	step := rec.Definition.Steps[j.Step]
	timeout := step.Timeout()
	if rec.Deadline != nil {
		if left := time.Until(*rec.Deadline); timeout == 0 || left < timeout {
			timeout = max(left, time.Millisecond)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	if m.principals != nil {
		who, ok := m.principals(rec.Owner)
		if !ok {
			cancel()
			m.fail(ctx, msg, j, fault.New(fault.Unauthorized, fault.ReasonInvalidCredentials,
				"the API key that owns this plan is no longer configured"), log)
			return
		}
		sctx = auth.With(sctx, who)
	}
	m.mu.Lock()
	m.steps[j.ExecutionID] = cancel
	m.mu.Unlock()
	beats := m.heartbeat(sctx, cancel, msg, j)
	log.Debug("plan: running step", "step_id", step.ID, "action", step.Action, "attempt", rec.Checkpoint.Attempts[j.Step])
	rid := j.ExecutionID + "/" + step.ID
	out, runErr := m.skills.Execute(hostfn.WithCall(sctx, &hostfn.Call{SessionID: j.SessionID, Skill: step.Action, RequestID: rid}),
		plugin.Call{SkillID: step.Action, Agent: step.Agent, Input: step.Params, Timeout: timeout, SessionID: j.SessionID, RequestID: rid})
	cancel()
	<-beats
	m.mu.Lock()
	delete(m.steps, j.ExecutionID)
	m.mu.Unlock()
	if ctx.Err() != nil {
		// Shutting down: the step did not finish; hand the job back.
		_ = msg.Nak()
		return
	}
	if runErr != nil {
		m.fail(ctx, msg, j, fault.From(runErr), log)
		return
	}
	if len(out.Output) > m.cfg.MaxRecordBytes {
		m.fail(ctx, msg, j, m.recs.tooLarge(len(out.Output)), log) // cannot fit: spare the encoding
		return
	}
	rec, err = m.recs.update(ctx, j.SessionID, j.PlanID, func(r *Record) error {
		if err := current(r); err != nil {
			return err
		}
		r.Checkpoint.Outputs = append(r.Checkpoint.Outputs, outputValue(out.Output))
		if r.Checkpoint.Completed() == len(r.Definition.Steps) {
			now := time.Now().UTC()
			r.Status, r.FinishedAt = StatusCompleted, &now
		}
		return nil
	})
	var fe *fault.Error
	switch {
	case errors.Is(err, errStale):
		m.ack(ctx, msg, log) // cancelled meanwhile
	case errors.As(err, &fe) && fe.Kind == fault.ResourceExhausted:
		m.fail(ctx, msg, j, fe, log) // the output does not fit the checkpoint
	case err != nil:
		m.retry(msg, log, err) // the step runs again: its output was not checkpointed
	default:
		m.advance(ctx, msg, rec, log)
	}
}

// heartbeat tells JetStream the job is alive every AckWait/3 and cancels the
// step when the plan is no longer this execution's (cancelled, possibly on
// another host). The returned channel closes when it stops.
func (m *Manager) heartbeat(ctx context.Context, cancel context.CancelFunc, msg jetstream.Msg, j job) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(m.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_ = msg.InProgress()
			rec, _, err := m.recs.get(ctx, j.SessionID, j.PlanID)
			if errors.Is(err, fault.ErrPlanNotFound) || (err == nil && (rec.ExecutionID != j.ExecutionID || rec.Status != StatusExecuting)) {
				cancel()
				return
			}
		}
	}()
	return done
}

// advance enqueues the job of the first step not yet checkpointed (if the
// plan is still executing) and acknowledges msg.
func (m *Manager) advance(ctx context.Context, msg jetstream.Msg, rec *Record, log *slog.Logger) {
	if next := rec.Checkpoint.Completed(); rec.Status == StatusExecuting && next < len(rec.Definition.Steps) {
		err := m.publish(ctx, job{SessionID: rec.SessionID, PlanID: rec.PlanID, ExecutionID: rec.ExecutionID, Step: next})
		if err != nil {
			m.retry(msg, log, err)
			return
		}
	}
	m.ack(ctx, msg, log)
}

// fail marks the job's execution failed with fe (unless it already ended)
// and acknowledges msg.
func (m *Manager) fail(ctx context.Context, msg jetstream.Msg, j job, fe *fault.Error, log *slog.Logger) {
	_, err := m.recs.update(ctx, j.SessionID, j.PlanID, func(r *Record) error {
		if r.ExecutionID != j.ExecutionID || r.Status != StatusExecuting {
			return errStale
		}
		step := r.Definition.Steps[j.Step]
		now := time.Now().UTC()
		r.Status, r.FinishedAt = StatusFailed, &now
		details := map[string]any{"step_id": step.ID, "step_index": j.Step, "reason": fe.Reason, "action": step.Action,
			"attempt": r.Checkpoint.Attempts[j.Step]}
		if step.Agent != "" {
			details["agent"] = step.Agent
		}
		r.Error = &StepError{Code: fe.Kind.Code(), Message: fmt.Sprintf("step %q failed: %s", step.ID, fe.Message()), Details: details}
		return nil
	})
	if err != nil && !errors.Is(err, errStale) {
		m.retry(msg, log, err)
		return
	}
	if err == nil {
		log.Info("plan: failed", "reason", fe.Reason, "err", fe.Message())
	}
	m.ack(ctx, msg, log)
}

func (m *Manager) ack(ctx context.Context, msg jetstream.Msg, log *slog.Logger) {
	if err := msg.DoubleAck(ctx); err != nil && ctx.Err() == nil {
		log.Warn("plan: acknowledging a step job failed; it will be redelivered", "err", err)
	}
}

func (m *Manager) retry(msg jetstream.Msg, log *slog.Logger, err error) {
	log.Warn("plan: step job postponed", "err", err)
	_ = msg.NakWithDelay(retryDelay)
}

// outputValue is a plugin's output as the JSON value it encodes when it is
// JSON, otherwise as a JSON string; empty output is null.
func outputValue(out []byte) json.RawMessage {
	if len(out) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(out) {
		return json.RawMessage(out)
	}
	b, _ := json.Marshal(string(out)) // invalid UTF-8 becomes U+FFFD
	return b
}
