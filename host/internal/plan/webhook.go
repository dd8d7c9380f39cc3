package plan

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/delivery"
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

// DeliveryKind is the delivery.Request Kind of webhooks (the kind label of
// the delivery metrics).
const DeliveryKind = "webhook"

// WebhookConfig configures webhook delivery. Zero fields take the defaults.
type WebhookConfig struct {
	// Delivery sends the webhooks, sharing the host's per-key and
	// per-destination limits with push notifications. Optional. Default: a
	// service of its own (default limits) that Manager.Run runs.
	Delivery *delivery.Service
	// Plans is the plans.* section: plans.webhook_secret signs every
	// webhook of plans that bring no secret of their own (empty: such a
	// plan's webhook is refused at plan/execute), plans.webhook_attempts
	// bounds the attempts per webhook. Optional: the zero section is
	// config.Defaults().Plans.
	Plans Config
	// Net is the network policy webhooks are sent under, the one http_fetch
	// uses (net.*): internal addresses are refused unless Net.AllowPrivate
	// lists them, and Net.Timeout bounds one attempt. Required.
	Net hostfn.NetPolicy
	// Backoff is the wait after the first failed attempt; it doubles (with
	// jitter) up to 30s. Optional. Default: 1s.
	Backoff time.Duration
}

// Webhooks posts final plan statuses to the URLs plans name, signed and
// retried, through the same dial guard as http_fetch, by a delivery
// service: never on the plan's step runners. It is safe for concurrent use.
type Webhooks struct {
	cfg WebhookConfig
	own bool // cfg.Delivery was made here: Manager.Run runs it
}

// NewWebhooks returns a webhook sender.
func NewWebhooks(cfg WebhookConfig) *Webhooks {
	if cfg.Plans == (Config{}) {
		cfg.Plans = config.Defaults().Plans
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	w := &Webhooks{cfg: cfg}
	if cfg.Delivery == nil {
		w.cfg.Delivery, w.own = delivery.New(delivery.Config{Client: cfg.Net.Client()}), true
	}
	return w
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
	if secret == "" && w.cfg.Plans.WebhookSecret == "" {
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

// request is the delivery of body, rec's final status, with attempts left
// attempts: signed anew at every attempt (a fresh timestamp), the execution
// id as the delivery id.
func (w *Webhooks) request(rec *Record, body []byte, attempts int) *delivery.Request {
	secret := rec.Webhook.Secret
	if secret == "" {
		secret = w.cfg.Plans.WebhookSecret
	}
	event := map[string]string{StatusCompleted: "plan.completed", StatusFailed: "plan.failed", StatusCancelled: "plan.cancelled"}[rec.Status]
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "skillhost-webhook")
	h.Set(HeaderDelivery, rec.ExecutionID)
	h.Set(HeaderEvent, event)
	return &delivery.Request{
		Kind: DeliveryKind, Key: rec.Owner, URL: rec.Webhook.URL, Body: body, Header: h, Durable: true,
		Timeout: w.cfg.Net.Timeout, Retry: delivery.Retry{Attempts: attempts, Initial: w.cfg.Backoff},
		Before: func(h http.Header) {
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			h.Set(HeaderTimestamp, ts)
			h.Set(HeaderSignature, Sign([]byte(secret), ts, body))
		},
	}
}
