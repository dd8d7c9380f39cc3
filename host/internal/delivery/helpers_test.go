package delivery_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/delivery"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// receiver is an HTTP receiver on 127.0.0.1. A silent one accepts every
// request and answers none until release (or the test's end); fail decides
// the status of the others (0: 204).
type receiver struct {
	URL     string
	release chan struct{}
	fail    func(body string, attempt int) int
	unblock func() // releases the held requests (and answers later ones at once)

	mu       sync.Mutex
	holding  int // requests held open now
	maxHeld  int
	bodies   []string // delivered (2xx) bodies in order
	attempts map[string]int
}

func newReceiver(t *testing.T, silent bool, fail func(body string, attempt int) int) *receiver {
	t.Helper()
	r := &receiver{release: make(chan struct{}), fail: fail, attempts: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		body := string(b)
		if silent {
			r.mu.Lock()
			r.holding++
			r.maxHeld = max(r.maxHeld, r.holding)
			r.mu.Unlock()
			select {
			case <-r.release:
			case <-req.Context().Done():
			}
			r.mu.Lock()
			r.holding--
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.attempts[body]++
		code := http.StatusNoContent
		if r.fail != nil {
			if c := r.fail(body, r.attempts[body]); c != 0 {
				code = c
			}
		}
		if code < 300 {
			r.bodies = append(r.bodies, body)
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() { close(r.release) })
		srv.Close()
	})
	r.URL = srv.URL
	r.unblock = func() { once.Do(func() { close(r.release) }) }
	return r
}

// held is how many requests the receiver holds open now, and at most.
func (r *receiver) held() (now, most int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holding, r.maxHeld
}

// delivered is the bodies answered 2xx, in order.
func (r *receiver) delivered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// counter is an Observer that counts.
type counter struct {
	mu       sync.Mutex
	finished map[string]int // kind/outcome
	attempts map[string]int // kind/result
}

func (c *counter) Finished(kind, outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished[kind+"/"+outcome]++
}

func (c *counter) Attempted(kind, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts[kind+"/"+result]++
}

func (c *counter) get(kind string, o delivery.Outcome) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finished[kind+"/"+string(o)]
}

// results collects Done callbacks by request body.
type results struct {
	mu  sync.Mutex
	got map[string]delivery.Result
	key map[string]string
}

func (rs *results) done(key, body string) func(delivery.Result) {
	return func(r delivery.Result) {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		rs.got[body], rs.key[body] = r, key
	}
}

func (rs *results) of(body string) (delivery.Result, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.got[body]
	return r, ok
}

// byOutcome counts the results of key by outcome.
func (rs *results) byOutcome(key string) map[delivery.Outcome]int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := map[delivery.Outcome]int{}
	for body, r := range rs.got {
		if rs.key[body] == key {
			out[r.Outcome]++
		}
	}
	return out
}

// svc is a running Service with a counting observer and a log buffer.
type svc struct {
	*delivery.Service
	obs  *counter
	logs *testutil.LogBuffer
	res  *results
	stop func() // ends Run and waits for it
}

func mustService(t *testing.T, cfg delivery.Config) *svc {
	t.Helper()
	s := &svc{obs: &counter{finished: map[string]int{}, attempts: map[string]int{}}, logs: &testutil.LogBuffer{},
		res: &results{got: map[string]delivery.Result{}, key: map[string]string{}}}
	cfg.Observer = s.obs
	cfg.Logger = slog.New(slog.NewJSONHandler(s.logs, nil))
	if cfg.Client == nil {
		cfg.Client = hostfn.NetPolicy{AllowPrivate: loopback, Timeout: time.Minute}.Client()
	}
	s.Service = delivery.New(cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	var once sync.Once
	s.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(s.stop)
	return s
}

// submit queues a push-like request of key with body to url.
func (s *svc) submit(t *testing.T, key, lane, url, body string, retry delivery.Retry) {
	t.Helper()
	err := s.Submit(&delivery.Request{Kind: "test", Key: key, Lane: lane, URL: url, Body: []byte(body), Timeout: time.Minute,
		Retry: retry, Done: s.res.done(key, body)})
	if err != nil {
		t.Fatalf("Submit %s: %v", body, err)
	}
}

// waitDone waits for the Done of body and returns its result.
func (s *svc) waitDone(t *testing.T, body string) delivery.Result {
	t.Helper()
	var r delivery.Result
	testutil.Eventually(t, 30*time.Second, "the delivery of "+body+" to end", func() bool {
		var ok bool
		r, ok = s.res.of(body)
		return ok
	})
	return r
}

// deliveryLimits is the default delivery.* section with edit applied.
func deliveryLimits(edit func(*config.Delivery)) config.Delivery {
	c := config.Defaults().Delivery
	edit(&c)
	return c
}
