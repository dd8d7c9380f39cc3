package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/delivery"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Names of the webhook queue: a work-queue stream of its own, so a webhook
// job never waits for (or holds) a step runner, and its own durable
// consumer, shared by every host, that hands the jobs to the delivery
// service.
const (
	WebhookStream       = "SKILLHOST_PLAN_WEBHOOKS"
	WebhookSubjectBase  = "skillhost.plans.webhooks" // job subjects: WebhookSubjectBase + "." + execution id
	WebhookConsumerName = "skillhost_plan_webhooks"
	webhookSubjectAll   = WebhookSubjectBase + ".*"
)

// Waits of the webhook queue.
const (
	keyFullDelay  = 5 * time.Second        // a job whose key has too many webhooks waiting comes back after this
	hostFullPause = 250 * time.Millisecond // the sender fetches nothing this long when the host is full
)

// openWebhookQueue binds (creating when missing) the webhook stream and its
// consumer.
func openWebhookQueue(ctx context.Context, st *store.Store, cfg settings) (*store.Queue, error) {
	q, err := st.OpenQueue(ctx, store.QueueConfig{
		Stream:              WebhookStream,
		Description:         "skillhost plan webhooks waiting to be delivered (work queue)",
		Subjects:            webhookSubjectAll,
		Consumer:            WebhookConsumerName,
		ConsumerDescription: "skillhost plan webhook sender (shared by every host)",
		AckWait:             cfg.AckWait,
		MaxDeliver:          -1, // attempts are counted in the plan record, not in deliveries of the job
		Dedupe:              DefaultDuplicates,
		Replicas:            cfg.replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("plan: open queue %s: %w", WebhookStream, err)
	}
	return q, nil
}

// publishWebhook enqueues the webhook job of an ended execution (a no-op
// within the duplicate window when it is already queued).
func (m *Manager) publishWebhook(ctx context.Context, j job) error {
	j.Kind, j.Step = jobWebhook, 0
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("plan: encode webhook job: %w", err)
	}
	return m.hooks.Publish(ctx, WebhookSubjectBase+"."+j.ExecutionID, b, j.msgID())
}

// sendWebhooks hands webhook jobs to the delivery service until ctx ends,
// and keeps the jobs it holds alive meanwhile. A job is acknowledged once
// its outcome is in the plan record; a job that is not (the host stopped,
// or crashed) is delivered again, here or on another host: at least once.
func (m *Manager) sendWebhooks(ctx context.Context) {
	held := &heldJobs{msgs: map[*store.Job]struct{}{}}
	stop := held.heartbeat(ctx, m.cfg.AckWait/3)
	defer stop()
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, pollWait)
		msg, err := m.hooks.Next(fctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			if msg != nil {
				_ = msg.Nak()
			}
			return
		case err == nil:
			if errors.Is(m.webhookJob(ctx, msg, held), delivery.ErrFull) {
				select { // the host is full for every key: let it drain
				case <-ctx.Done():
				case <-time.After(hostFullPause):
				}
			}
		case errors.Is(err, store.ErrNoJob):
		default:
			m.log.Warn("plan: fetching webhook jobs failed; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(retryDelay):
			}
		}
	}
}

// webhookJob submits one webhook job's delivery; it returns the delivery
// service's refusal (the job comes back later).
func (m *Manager) webhookJob(ctx context.Context, msg *store.Job, held *heldJobs) error {
	var j job
	if err := json.Unmarshal(msg.Data(), &j); err != nil || j.ExecutionID == "" {
		m.log.Error("plan: dropping a malformed webhook job", "subject", msg.Subject())
		_ = msg.Term()
		return nil
	}
	log := m.log.With("plan_id", j.PlanID, "session_id", j.SessionID, "execution_id", j.ExecutionID)
	rec, _, err := m.recs.get(ctx, j.SessionID, j.PlanID)
	switch {
	case errors.Is(err, fault.ErrPlanNotFound):
		m.ack(ctx, msg, log) // the plan expired
		return nil
	case err != nil:
		m.retry(ctx, msg, log, err)
		return nil
	}
	hook := rec.Webhook
	if rec.ExecutionID != j.ExecutionID || hook == nil || hook.Status != WebhookPending || !terminal(rec.Status) {
		m.ack(ctx, msg, log) // delivered, or an older execution's
		return nil
	}
	if hook.Attempts >= m.webhooks.cfg.Plans.WebhookAttempts { // used up before a crash
		m.recordWebhook(ctx, msg, rec, delivery.Result{Outcome: delivery.Failed, Attempts: 0, Text: hook.LastError}, log)
		return nil
	}
	st := StatusOf(rec)
	st.Webhook = nil // the body is the final status, not its own delivery
	body, err := json.Marshal(st)
	if err != nil {
		log.Error("plan: encoding the webhook body failed", "err", err)
		m.ack(ctx, msg, log)
		return nil
	}
	req := m.webhooks.request(rec, body, m.webhooks.cfg.Plans.WebhookAttempts-hook.Attempts)
	req.Retrying = func(n int, text string) { m.noteWebhookAttempt(ctx, rec, hook.Attempts+n, text) }
	req.Done = func(r delivery.Result) {
		defer held.drop(msg)
		if r.Outcome == delivery.Stopped {
			_ = msg.Nak() // stopping: delivered later, here or by another host
			return
		}
		m.recordWebhook(ctx, msg, rec, r, log)
	}
	held.add(msg)
	if err := m.webhooks.cfg.Delivery.Submit(req); err != nil {
		held.drop(msg)
		_ = msg.NakAfter(keyFullDelay)
		return err
	}
	return nil
}

// noteWebhookAttempt records a failed attempt that will be retried, so
// plan/status shows it and a redelivered job knows the attempts left.
func (m *Manager) noteWebhookAttempt(ctx context.Context, rec *Record, attempts int, text string) {
	_, err := m.recs.update(ctx, rec.SessionID, rec.PlanID, func(r *Record) error {
		if r.ExecutionID != rec.ExecutionID || r.Webhook == nil || r.Webhook.Status != WebhookPending {
			return errUnchanged
		}
		r.Webhook.Attempts, r.Webhook.LastError = attempts, clip(text, 300)
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) && ctx.Err() == nil {
		m.log.Warn("plan: recording a webhook attempt failed", "plan_id", rec.PlanID, "err", err)
	}
}

// recordWebhook stores a webhook's outcome and acknowledges its job (or
// hands it back when the record cannot be written: delivered again).
func (m *Manager) recordWebhook(ctx context.Context, msg *store.Job, rec *Record, r delivery.Result, log *slog.Logger) {
	base := rec.Webhook.Attempts
	_, err := m.recs.update(ctx, rec.SessionID, rec.PlanID, func(cur *Record) error {
		if cur.ExecutionID != rec.ExecutionID || cur.Webhook == nil || cur.Webhook.Status != WebhookPending {
			return errUnchanged
		}
		cur.Webhook.Attempts = base + r.Attempts
		if r.Outcome == delivery.Delivered {
			now := time.Now().UTC()
			cur.Webhook.Status, cur.Webhook.DeliveredAt, cur.Webhook.LastError = WebhookDelivered, &now, ""
		} else {
			cur.Webhook.Status, cur.Webhook.LastError = WebhookFailed, clip(r.Text, 300)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		m.retry(ctx, msg, log, err)
		return
	}
	if r.Outcome != delivery.Delivered {
		log.Warn("plan: webhook delivery failed", "url", rec.Webhook.URL, "attempts", base+r.Attempts, "err", r.Text)
	}
	m.ack(ctx, msg, log)
}

// heldJobs are the webhook jobs the delivery service holds; they are kept
// alive (InProgress) until their outcome is recorded.
type heldJobs struct {
	mu   sync.Mutex
	msgs map[*store.Job]struct{}
}

func (h *heldJobs) add(m *store.Job) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs[m] = struct{}{}
}

func (h *heldJobs) drop(m *store.Job) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.msgs, m)
}

// heartbeat marks every held job in progress each period until ctx ends
// or the returned stop is called.
func (h *heldJobs) heartbeat(ctx context.Context, period time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			h.mu.Lock()
			msgs := make([]*store.Job, 0, len(h.msgs))
			for m := range h.msgs {
				msgs = append(msgs, m)
			}
			h.mu.Unlock()
			for _, m := range msgs {
				_ = m.InProgress()
			}
		}
	}()
	return func() { cancel(); <-done }
}
