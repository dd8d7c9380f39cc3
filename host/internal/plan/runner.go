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

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

const (
	pollWait   = 2 * time.Second        // one pull's wait for a job
	retryDelay = time.Second            // redelivery delay after a store hiccup
	startGrace = 10 * time.Second       // how long a job may precede its execution's record
	startRetry = 250 * time.Millisecond // redelivery delay while waiting for that record
)

// Job kinds.
const (
	jobStep    = ""        // run step Step
	jobWebhook = "webhook" // deliver the final status to the plan's webhook
)

// job is one job on a work queue: "run step Step of this execution" (the
// step stream), or "deliver this execution's final status" (the webhook
// stream).
type job struct {
	SessionID   string `json:"session_id"`
	PlanID      string `json:"plan_id"`
	ExecutionID string `json:"execution_id"`
	Step        int    `json:"step"`
	Kind        string `json:"kind,omitempty"`
}

// msgID names a job for the stream's duplicate detection.
func (j job) msgID() string {
	if j.Kind == jobWebhook {
		return j.ExecutionID + ":webhook"
	}
	return j.ExecutionID + ":" + strconv.Itoa(j.Step)
}

// publish enqueues j. The message id makes a re-publish after a crash
// (checkpoint written, job not yet acknowledged) a no-op within the stream's
// duplicate window.
func (m *Manager) publish(ctx context.Context, j job) error {
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("plan: encode job: %w", err)
	}
	return m.jobs.Publish(ctx, SubjectBase+"."+j.ExecutionID, b, j.msgID())
}

// Run executes jobs until ctx ends, and hands webhook jobs to the delivery
// service (their own queue: a webhook never holds a step runner). It holds
// up to 2 × cfg.Workers step jobs at once but runs at most cfg.Workers steps: a step waiting for its retry
// backoff or for a busy plugin holds a job, not a worker. Jobs left
// unacknowledged by a crash are redelivered after AckWait, so plans resume
// from their checkpoint; on ctx's end the running steps are interrupted and
// their jobs handed back at once (to another host, or to the next start).
// Run may be called once per Manager.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("plan: Run called twice")
	}
	// The boot id is what a quarantined step's log line and error name.
	m.log.Info("plan: running steps", "workers", m.cfg.Workers, "boot", m.st.Boot())
	var wg sync.WaitGroup
	for range 2 * m.cfg.Workers {
		wg.Go(func() { m.work(ctx) })
	}
	if m.hooks != nil {
		wg.Go(func() { m.sendWebhooks(ctx) })
		if m.webhooks.own {
			wg.Go(func() { m.webhooks.cfg.Delivery.Run(ctx) })
		}
	}
	wg.Wait()
	return nil
}

func (m *Manager) work(ctx context.Context) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, pollWait)
		msg, err := m.jobs.Next(fctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			if msg != nil {
				_ = msg.Nak()
			}
			return
		case err == nil:
			m.handle(ctx, msg)
		case errors.Is(err, store.ErrNoJob):
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
func (m *Manager) handle(ctx context.Context, msg *store.Job) {
	var j job
	meta, merr := msg.Meta()
	if err := json.Unmarshal(msg.Data(), &j); err != nil || merr != nil || j.ExecutionID == "" {
		m.log.Error("plan: dropping a malformed job", "subject", msg.Subject())
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
		m.retry(ctx, msg, log, err)
		return
	}
	if rec.ExecutionID != j.ExecutionID {
		if rec, err = m.awaitExecution(ctx, rec, j, meta.Published); err != nil {
			m.retry(ctx, msg, log, err)
			return
		}
	}
	if rec == nil {
		_ = msg.NakAfter(startRetry) // its execution is not recorded yet
		return
	}
	if rec.ExecutionID != j.ExecutionID {
		m.ack(ctx, msg, log) // stale: an older execution's job
		return
	}
	if j.Kind == jobWebhook { // queued here by an older version: moved to the webhook queue
		m.advance(ctx, msg, rec, log)
		return
	}
	if !rec.consistent() || j.Step < 0 || j.Step >= len(rec.Definition.Steps) {
		log.Error("plan: the job does not fit the plan's checkpoint (written by another version?)")
		m.fail(ctx, msg, j, fault.Newf(fault.Internal, fault.ReasonInternal,
			"the plan's checkpoint does not fit this host's version; execute the plan again"), log)
		return
	}
	seq := meta.Seq
	if k, ok := rec.heldBy(seq); ok && k != j.Step {
		// The job went on to run step k in place of queuing its job
		// (runStep) and was redelivered: it holds step k now.
		j.Step = k
		log = log.With("held_step", k)
	}
	st := rec.Checkpoint.Steps[j.Step]
	switch {
	case rec.Status != StatusExecuting:
		m.advance(ctx, msg, rec, log) // ended meanwhile; the webhook job may be missing
	case st.Status == StepCompleted:
		m.advance(ctx, msg, rec, log) // checkpointed before a crash: the next jobs may be missing
	case st.Status == StepPending, st.Status == StepFailed, st.Status == StepCancelled,
		st.Status != StepQueued && st.Job != seq:
		m.ack(ctx, msg, log) // not this job's to run (a duplicate, or a step that ended)
	default:
		m.start(ctx, msg, j, seq, rec, meta.Delivered, log)
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

// heartbeat tells JetStream the job is alive every AckWait/3 and cancels the
// step when the plan is no longer this execution's (cancelled or failed,
// possibly on another host). The returned channel closes when it stops.
func (m *Manager) heartbeat(ctx context.Context, cancel context.CancelFunc, msg *store.Job, j job) <-chan struct{} {
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

// advance re-publishes the jobs of the execution's queued steps and, once
// it has ended, its webhook job (on the webhook queue) (all idempotent within the stream's
// duplicate window), then acknowledges msg.
func (m *Manager) advance(ctx context.Context, msg *store.Job, rec *Record, log *slog.Logger) {
	if err := m.enqueue(ctx, rec); err != nil {
		m.retry(ctx, msg, log, err)
		return
	}
	m.ack(ctx, msg, log)
}

// enqueue publishes the jobs an updated record calls for: one per queued
// step while executing, the webhook job once ended.
func (m *Manager) enqueue(ctx context.Context, rec *Record) error {
	flushEvents(ctx) // the jobs' runners emit after what this one did
	base := job{SessionID: rec.SessionID, PlanID: rec.PlanID, ExecutionID: rec.ExecutionID}
	if rec.Status == StatusExecuting {
		for _, i := range rec.withStatus(StepQueued) {
			j := base
			j.Step = i
			if err := m.publish(ctx, j); err != nil {
				return err
			}
		}
		return nil
	}
	if rec.Webhook != nil && rec.Webhook.Status == WebhookPending && m.hooks != nil {
		return m.publishWebhook(ctx, base)
	}
	return nil
}

func (m *Manager) ack(ctx context.Context, msg *store.Job, log *slog.Logger) {
	flushEvents(ctx)
	if err := msg.Ack(ctx); err != nil && ctx.Err() == nil {
		log.Warn("plan: acknowledging a step job failed; it will be redelivered", "err", err)
	}
}

func (m *Manager) retry(ctx context.Context, msg *store.Job, log *slog.Logger, err error) {
	flushEvents(ctx)
	log.Warn("plan: step job postponed", "err", err)
	_ = msg.NakAfter(retryDelay)
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
