package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultMaxPending       = 4096
	DefaultMaxPendingPerKey = 256
	DefaultPerDestination   = 4
	DefaultPerKey           = 8
	DefaultMaxConcurrent    = 64
	DefaultTimeout          = 10 * time.Second
	DefaultDropLogEvery     = 10 * time.Second
)

// Config configures a Service. Zero fields take the defaults.
type Config struct {
	// Client sends every attempt. Required: hostfn.NetPolicy.Client (the
	// dial guard, no redirects, no proxy from the environment).
	Client *http.Client
	// MaxPending caps the deliveries waiting on this host, every key and
	// kind together (delivery.max_pending). Optional. Default: 4096.
	MaxPending int
	// MaxPendingPerKey caps the deliveries of one key waiting on this host
	// (delivery.max_pending_per_key). Optional. Default: 256.
	MaxPendingPerKey int
	// KindPending caps the deliveries of one kind waiting on this host
	// (a2a.push.max_pending for "push"). Optional. Default: none beyond
	// MaxPending.
	KindPending map[string]int
	// PerDestination caps the POSTs to one destination (scheme, host,
	// port) running at once (delivery.concurrent_per_destination).
	// Optional. Default: 4.
	PerDestination int
	// PerKey caps the POSTs of one key running at once
	// (delivery.concurrent_per_key). Optional. Default: 8.
	PerKey int
	// MaxConcurrent caps the POSTs running at once on this host
	// (delivery.max_concurrent). Optional. Default: 64.
	MaxConcurrent int
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
	// Timeout bounds one attempt. Optional. Default: 10s.
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

// Service delivers requests; see the package documentation.
type Service struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	obs    Observer
	wake   chan struct{}
	wg     sync.WaitGroup // running attempts

	mu sync.Mutex
	q  queues
}

// New returns a Service; Run delivers.
func New(cfg Config) *Service {
	cfg.MaxPending = orDefault(cfg.MaxPending, DefaultMaxPending)
	cfg.MaxPendingPerKey = orDefault(cfg.MaxPendingPerKey, DefaultMaxPendingPerKey)
	cfg.PerDestination = orDefault(cfg.PerDestination, DefaultPerDestination)
	cfg.PerKey = orDefault(cfg.PerKey, DefaultPerKey)
	cfg.MaxConcurrent = orDefault(cfg.MaxConcurrent, DefaultMaxConcurrent)
	cfg.DropLogEvery = orDefault(cfg.DropLogEvery, DefaultDropLogEvery)
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	s := &Service{cfg: cfg, client: cfg.Client, log: cfg.Logger, obs: cfg.Observer, wake: make(chan struct{}, 1)}
	s.q.init()
	return s
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

type nopObserver struct{}

func (nopObserver) Finished(string, string)  {}
func (nopObserver) Attempted(string, string) {}

// Submit queues r. It never blocks on the network. Past a pending cap a
// Durable request is refused with ErrKeyFull or ErrFull; any other is accepted and its
// key's oldest waiting delivery of the same kind (or r itself, when the key
// has none waiting) is dropped: its Done sees Dropped. An invalid URL is an
// error.
func (s *Service) Submit(r *Request) error {
	dest, err := destination(r.URL)
	if err != nil {
		return err
	}
	if r.Retry.Attempts < 1 {
		r.Retry.Attempts = 1
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	s.mu.Lock()
	if s.q.stopped {
		s.mu.Unlock()
		return ErrStopped
	}
	var dropped *item
	if limit := s.full(r); limit != "" {
		if r.Durable {
			s.mu.Unlock()
			if limit == limitPerKey {
				return fmt.Errorf("%w (%s)", ErrKeyFull, limit)
			}
			return fmt.Errorf("%w (%s)", ErrFull, limit)
		}
		dropped = s.q.dropOldest(r.Key, r.Kind)
		if dropped == nil { // nothing of the key's waits: the new one goes
			dropped = &item{req: r}
		}
		s.q.noteDrop(r.Key, r.Kind, limit)
	}
	if dropped == nil || dropped.req != r {
		s.q.add(r, dest)
	}
	s.mu.Unlock()
	if dropped != nil {
		s.finish(dropped.req, Result{Outcome: Dropped, Attempts: dropped.attempts, Text: "dropped: too many deliveries waiting for this key"})
		s.logDrops(r.Key)
	}
	s.poke()
	return nil
}

const limitPerKey = "delivery.max_pending_per_key"

// full names the pending cap r would pass ("" when none), under s.mu.
func (s *Service) full(r *Request) string {
	switch {
	case s.q.pendingOf(r.Key) >= s.cfg.MaxPendingPerKey:
		return limitPerKey
	case s.q.pending >= s.cfg.MaxPending:
		return "delivery.max_pending"
	}
	if limit, ok := s.cfg.KindPending[r.Kind]; ok && s.q.kinds[r.Kind] >= limit {
		return r.Kind + " pending cap"
	}
	return ""
}

// destination is scheme://host:port of raw.
func destination(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", fmt.Errorf("delivery: %q is not an http or https URL", raw)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + u.Hostname() + ":" + port, nil
}

// poke wakes Run.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Pending returns the deliveries waiting on this host by kind (in flight
// and waiting for a retry included).
func (s *Service) Pending() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.q.kinds))
	for k, n := range s.q.kinds {
		out[k] = n
	}
	return out
}

// Run delivers until ctx ends; then it interrupts the running attempts,
// waits for them and ends every waiting delivery with Stopped. Run may be
// called once.
func (s *Service) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.dispatch(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), 0))
		}
		select {
		case <-ctx.Done():
			s.stop()
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// dispatch starts every attempt the caps allow and returns when the next
// retry is due (zero: none waits).
func (s *Service) dispatch(ctx context.Context) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.q.releaseDue(time.Now())
	for s.q.inflight < s.cfg.MaxConcurrent {
		it := s.q.next(s.cfg.PerKey, s.cfg.PerDestination)
		if it == nil {
			break
		}
		s.wg.Add(1)
		go s.attempt(ctx, it)
	}
	return s.q.nextDue()
}

// attempt makes one POST of it and files its result.
func (s *Service) attempt(ctx context.Context, it *item) {
	defer s.wg.Done()
	r := it.req
	err := post(ctx, s.client, r)
	stopped := ctx.Err() != nil
	n := it.attempts + 1
	retry := err != nil && !stopped && n < r.Retry.Attempts && retryable(err)
	switch {
	case stopped:
	case err == nil:
		s.obs.Attempted(r.Kind, "ok")
	case retry:
		s.obs.Attempted(r.Kind, "retry")
	default:
		s.obs.Attempted(r.Kind, "final")
	}
	var text string
	if err != nil {
		text = Describe(err)
	}
	if retry && r.Retrying != nil {
		r.Retrying(n, text)
	}
	s.mu.Lock()
	it.attempts, it.text = n, text
	var done bool
	switch {
	case stopped:
		it.attempts-- // interrupted: not a real attempt
		s.q.requeue(it)
	case retry:
		s.q.retryLater(it, time.Now().Add(r.Retry.Wait(n)))
	default:
		s.q.remove(it)
		done = true
	}
	s.mu.Unlock()
	if done {
		res := Result{Outcome: Delivered, Attempts: n}
		if err != nil {
			res = Result{Outcome: Failed, Attempts: n, Text: text}
			s.log.Debug("delivery: given up", "kind", r.Kind, "key", r.Key, "attempts", n, "err", text)
		}
		s.finish(r, res)
	}
	s.poke()
}

// finish counts and reports a delivery's end.
func (s *Service) finish(r *Request, res Result) {
	if res.Outcome != Stopped {
		s.obs.Finished(r.Kind, string(res.Outcome))
	}
	if r.Done != nil {
		r.Done(res)
	}
}

// stop waits for the running attempts (their context has ended) and ends
// every waiting delivery with Stopped.
func (s *Service) stop() {
	s.wg.Wait()
	s.mu.Lock()
	s.q.stopped = true
	left := s.q.drain()
	s.mu.Unlock()
	for _, it := range left {
		s.finish(it.req, Result{Outcome: Stopped, Attempts: it.attempts, Text: it.text})
	}
}

// logDrops writes the key's drop line when none was written for it in the
// last DropLogEvery: one line per burst, with the count since the last.
func (s *Service) logDrops(key string) {
	s.mu.Lock()
	line, ok := s.q.dropLine(key, time.Now(), s.cfg.DropLogEvery)
	s.mu.Unlock()
	if ok {
		s.log.Warn("delivery: a key has too many deliveries waiting; its oldest are dropped",
			"key", key, "kind", line.kind, "dropped", line.count, "limit", line.limit)
	}
}
