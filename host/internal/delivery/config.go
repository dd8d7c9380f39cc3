package delivery

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// DefaultDropLogEvery is the default of Config.DropLogEvery (not a
// configuration key).
const DefaultDropLogEvery = 10 * time.Second

// Config configures a Service.
type Config struct {
	// Delivery is the delivery.* section: the deliveries waiting on this
	// host (max_pending) and per key (max_pending_per_key), the POSTs
	// running at once per destination (scheme, host, port;
	// concurrent_per_destination), per key (concurrent_per_key) and on the
	// host (max_concurrent). Optional: the zero section is
	// config.Defaults().Delivery.
	config.Delivery
	// Client sends every attempt. Required: hostfn.NetPolicy.Client (the
	// dial guard, no redirects, no proxy from the environment).
	Client *http.Client
	// KindPending caps the deliveries of one kind waiting on this host
	// (a2a.push.max_pending for "push"). Optional. Default: none beyond
	// MaxPending.
	KindPending map[string]int
	// Observer counts outcomes and drops (*metrics.Deliveries). Optional.
	Observer Observer
	// Logger. Optional. Default: slog.Default().
	Logger *slog.Logger
	// DropLogEvery is the shortest interval between two log lines about
	// one key's drops. Optional. Default: 10s.
	DropLogEvery time.Duration
}

// Observer receives what a Service does, for metrics. Calls must be cheap
// and must not call back into the Service.
type Observer interface {
	// Finished counts a delivery that ended: outcome is Delivered, Failed
	// or Dropped (as a string, so observers need not import this package).
	Finished(kind, outcome string)
	// Attempted counts one POST: "ok", "retry" (it will be tried again) or
	// "final" (failed for good).
	Attempted(kind, result string)
}

// Outcome is how a delivery ended.
type Outcome string

// Outcomes of a delivery.
const (
	Delivered Outcome = "delivered" // a 2xx answer
	Failed    Outcome = "failed"    // attempts used up, or a failure no retry helps
	Dropped   Outcome = "dropped"   // never attempted again: its key was over a pending cap
	Stopped   Outcome = "stopped"   // the service stopped first (not counted: the caller may deliver it later)
)

// Request is one delivery. The Service owns it once submitted: the caller
// must not change it.
type Request struct {
	// Kind names what is delivered ("push", "webhook"): a metrics label, so
	// one of a few constants, never client input.
	Kind string
	// Key is the owner the delivery counts against (its pending and
	// concurrency shares).
	Key string
	// Lane orders deliveries: those with the same Key and Lane are
	// attempted one at a time, in submit order. "" is a lane of its own.
	Lane string
	// URL is the http or https URL POSTed to.
	URL string
	// Body is the request body (application/json).
	Body []byte
	// Header is sent with every attempt.
	Header http.Header
	// Before, if set, adjusts each attempt's headers (a webhook's
	// timestamp and signature).
	Before func(http.Header)
	// Timeout bounds one attempt (a2a.push.timeout, net.timeout). Required.
	Timeout time.Duration
	// Retry is the attempts and their backoff.
	Retry Retry
	// Durable: the caller keeps the delivery elsewhere (a JetStream job), so
	// past a cap Submit refuses it (ErrFull) instead of dropping one.
	Durable bool
	// Retrying, if set, is called after a failed attempt that will be
	// retried, with the attempts made and the failure's client-safe text.
	Retrying func(attempts int, text string)
	// Done, if set, is called once with the outcome (in no lock of the
	// Service; it may block briefly).
	Done func(Result)
}

// Result is how a delivery ended.
type Result struct {
	Outcome  Outcome
	Attempts int
	// Text describes the last failure for clients and logs: the HTTP
	// status, a timeout, or the refused rule; never an internal address.
	Text string
}

// ErrFull is returned by Submit for a Durable request past the host's
// pending cap (MaxPending, KindPending): every key waits.
var ErrFull = errors.New("delivery: too many deliveries waiting on this host")

// ErrKeyFull is returned by Submit for a Durable request past its key's
// pending cap (MaxPendingPerKey): only that key waits.
var ErrKeyFull = errors.New("delivery: too many deliveries of this key waiting")

// ErrStopped is returned by Submit after Run has ended.
var ErrStopped = errors.New("delivery: the service has stopped")
