package plan

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// Webhook headers. The signature is the hex HMAC-SHA256, keyed with the
// secret, of "<X-Skillhost-Timestamp>.<body>", sent as "sha256=<hex>".
const (
	HeaderSignature = "X-Skillhost-Signature"
	HeaderTimestamp = "X-Skillhost-Timestamp" // Unix seconds
	HeaderDelivery  = "X-Skillhost-Delivery"  // the execution id: the same on every attempt
	HeaderEvent     = "X-Skillhost-Event"     // plan.completed, plan.failed or plan.cancelled
)

// Webhook delivery states.
const (
	WebhookPending   = "pending"
	WebhookDelivered = "delivered"
	WebhookFailed    = "failed"
)

// Bounds of webhooks.
const (
	MaxWebhookURLBytes  = 2048
	MinSecretBytes      = 16
	MaxSecretBytes      = 256
	maxWebhookReplyRead = 64 << 10
)

// WebhookConfig configures webhook delivery. Zero fields take the defaults.
type WebhookConfig struct {
	// Secret signs every webhook of plans that bring no secret of their
	// own (plans.webhook_secret). Optional. Default: none: such a plan's
	// webhook is refused at plan/execute.
	Secret string
	// Net is the network policy webhooks are sent under, the one http_fetch
	// uses (net.*): internal addresses are refused unless Net.AllowPrivate
	// lists them, and Net.Timeout bounds one attempt (default 10s).
	Net hostfn.NetPolicy
	// Attempts bounds the attempts per webhook (plans.webhook_attempts).
	// Optional. Default: 5.
	Attempts int
	// Backoff is the wait after the first failed attempt; it doubles (with
	// jitter) up to 30s. Optional. Default: 1s.
	Backoff time.Duration
}

// Webhooks posts final plan statuses to the URLs plans name, signed and
// retried, through the same dial guard as http_fetch. It is safe for
// concurrent use.
type Webhooks struct {
	cfg    WebhookConfig
	client *http.Client
}

// NewWebhooks returns a webhook sender.
func NewWebhooks(cfg WebhookConfig) *Webhooks {
	if cfg.Net.Timeout <= 0 {
		cfg.Net.Timeout = 10 * time.Second
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 5
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	return &Webhooks{cfg: cfg, client: cfg.Net.Client()}
}

// Webhook is a plan's webhook and its delivery, kept in the plan record.
type Webhook struct {
	URL         string     `json:"url"`
	Secret      string     `json:"secret,omitempty"` // the plan's own secret; "" = the configured one
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error,omitempty"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

// WebhookStatus is the webhook part of plan/status (never the secret).
type WebhookStatus struct {
	URL         string  `json:"url"`
	Status      string  `json:"status"`
	Attempts    int     `json:"attempts"`
	LastError   *string `json:"last_error"`
	DeliveredAt *string `json:"delivered_at"`
}

func (w *Webhook) status() *WebhookStatus {
	if w == nil {
		return nil
	}
	s := &WebhookStatus{URL: w.URL, Status: w.Status, Attempts: w.Attempts, DeliveredAt: optTimestamp(w.DeliveredAt)}
	if w.LastError != "" {
		s.LastError = &w.LastError
	}
	return s
}

// prepare validates execution_options.webhook (and webhook_secret).
func (w *Webhooks) prepare(raw, secret string) (*Webhook, error) {
	const field = "execution_options.webhook"
	if w == nil {
		return nil, badField(field, "is not available on this host")
	}
	if raw == "" {
		return nil, badField(field, "is required with execution_options.webhook_secret")
	}
	if len(raw) > MaxWebhookURLBytes {
		return nil, badField(field, fmt.Sprintf("must be at most %d bytes", MaxWebhookURLBytes))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, badField(field, "is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, badField(field, "must be an http or https URL")
	case u.Hostname() == "":
		return nil, badField(field, "has no host")
	case u.User != nil:
		return nil, badField(field, "must not carry user info (use the signature to authenticate the host)")
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := hostfn.CheckAddr(addr, w.cfg.Net.AllowPrivate); err != nil {
			return nil, badField(field, err.Error())
		}
	}
	if secret != "" && (len(secret) < MinSecretBytes || len(secret) > MaxSecretBytes) {
		return nil, badField("execution_options.webhook_secret", fmt.Sprintf("must be %d..%d bytes", MinSecretBytes, MaxSecretBytes))
	}
	if secret == "" && w.cfg.Secret == "" {
		return nil, badField(field, "needs a signing secret: set plans.webhook_secret in the host config or execution_options.webhook_secret")
	}
	return &Webhook{URL: u.String(), Secret: secret, Status: WebhookPending}, nil
}

// Sign returns the signature header value of body sent at timestamp ts.
func Sign(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// errWebhookStatus is a receiver's non-2xx answer.
type errWebhookStatus struct{ code int }

func (e *errWebhookStatus) Error() string {
	return fmt.Sprintf("the receiver answered HTTP %d", e.code)
}

// post makes one signed delivery attempt. Errors worth no retry (refused
// address, a 4xx other than 408 and 429, a redirect) are permanent.
func (w *Webhooks) post(ctx context.Context, hook *Webhook, event, delivery string, body []byte) error {
	secret := hook.Secret
	if secret == "" {
		secret = w.cfg.Secret
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return backoff.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "skillhost-webhook")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderDelivery, delivery)
	req.Header.Set(HeaderEvent, event)
	req.Header.Set(HeaderSignature, Sign([]byte(secret), ts, body))
	resp, err := w.client.Do(req)
	if err != nil {
		if hostfn.IsAddressRefused(err) {
			return backoff.Permanent(err)
		}
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxWebhookReplyRead))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return &errWebhookStatus{c}
	default:
		return backoff.Permanent(&errWebhookStatus{c})
	}
}

// deliverWebhook handles a webhook job: it posts the final status with
// retries (keeping the job alive meanwhile), records the outcome and
// acknowledges msg. A crash mid-way delivers again: receivers deduplicate
// by X-Skillhost-Delivery.
func (m *Manager) deliverWebhook(ctx context.Context, msg jetstream.Msg, rec *Record, log *slog.Logger) {
	hook := rec.Webhook
	if hook == nil || hook.Status != WebhookPending || !terminal(rec.Status) || m.webhooks == nil {
		m.ack(ctx, msg, log)
		return
	}
	st := StatusOf(rec)
	st.Webhook = nil // the body is the final status, not its own delivery
	body, err := json.Marshal(st)
	if err != nil {
		log.Error("plan: encoding the webhook body failed", "err", err)
		m.ack(ctx, msg, log)
		return
	}
	event := map[string]string{StatusCompleted: "plan.completed", StatusFailed: "plan.failed", StatusCancelled: "plan.cancelled"}[rec.Status]
	alive, stop := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(m.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-alive.Done():
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	expo := backoff.NewExponentialBackOff()
	expo.InitialInterval, expo.MaxInterval = m.webhooks.cfg.Backoff, 30*time.Second
	tries := 0
	_, err = backoff.Retry(alive, func() (struct{}, error) {
		tries++
		return struct{}{}, m.webhooks.post(alive, hook, event, rec.ExecutionID, body)
	}, backoff.WithBackOff(expo), backoff.WithMaxTries(uint(m.webhooks.cfg.Attempts)), backoff.WithMaxElapsedTime(0))
	stop()
	if ctx.Err() != nil {
		_ = msg.Nak() // shutting down: deliver later
		return
	}
	_, uerr := m.recs.update(ctx, rec.SessionID, rec.PlanID, func(r *Record) error {
		if r.ExecutionID != rec.ExecutionID || r.Webhook == nil || r.Webhook.Status != WebhookPending {
			return errUnchanged
		}
		r.Webhook.Attempts += tries
		if err == nil {
			now := time.Now().UTC()
			r.Webhook.Status, r.Webhook.DeliveredAt, r.Webhook.LastError = WebhookDelivered, &now, ""
		} else {
			r.Webhook.Status, r.Webhook.LastError = WebhookFailed, clip(webhookError(err), 300)
		}
		return nil
	})
	if uerr != nil {
		m.retry(msg, log, uerr)
		return
	}
	if err != nil {
		log.Warn("plan: webhook delivery failed", "url", hook.URL, "attempts", tries, "err", err)
	}
	m.ack(ctx, msg, log)
}

// webhookError describes a delivery failure without internal detail.
func webhookError(err error) string {
	var st *errWebhookStatus
	switch {
	case errors.As(err, &st):
		return st.Error()
	case hostfn.IsAddressRefused(err):
		return "refused: " + err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "the receiver did not answer in time"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "Post ") {
		msg = msg[i+2:]
	}
	return msg
}
