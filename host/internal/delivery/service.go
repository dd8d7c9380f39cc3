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

	"github.com/skillhost/skillhost/host/config"
)

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
	if cfg.Delivery == (config.Delivery{}) {
		cfg.Delivery = config.Defaults().Delivery
	}
	if cfg.DropLogEvery <= 0 {
		cfg.DropLogEvery = DefaultDropLogEvery
	}
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
		return errors.New("delivery: Request.Timeout is required")
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
		it := s.q.next(s.cfg.ConcurrentPerKey, s.cfg.ConcurrentPerDestination)
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
