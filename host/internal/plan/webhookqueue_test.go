package plan

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// silentHook is a webhook receiver that accepts every request and answers
// none until the test ends.
type silentHook struct {
	URL     string
	holding atomic.Int32
}

func newSilentHook(t *testing.T) *silentHook {
	t.Helper()
	h := &silentHook{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.holding.Add(1)
		defer h.holding.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	h.URL = srv.URL
	return h
}

// tenant is a principal of its own (as an API key would be) with a session.
type tenant struct {
	ctx     context.Context
	session string
}

func mustTenant(t *testing.T, e *env, name string) tenant {
	t.Helper()
	p := auth.Local(name)
	s, err := e.st.CreateSession(localCtx(), store.Session{Owner: p.Owner()})
	if err != nil {
		t.Fatal(err)
	}
	return tenant{ctx: auth.With(context.Background(), p), session: s.ID}
}

func (tn tenant) run(t *testing.T, e *env, planID string, opts ExecuteOptions) {
	t.Helper()
	if _, err := e.m.Create(tn.ctx, CreateRequest{SessionID: tn.session, PlanID: planID, Definition: definition(step("a", "echo", `{"ok":true}`))}); err != nil {
		t.Fatalf("create %s: %v", planID, err)
	}
	if _, err := e.m.Execute(tn.ctx, tn.session, planID, opts); err != nil {
		t.Fatalf("execute %s: %v", planID, err)
	}
}

func (tn tenant) status(t *testing.T, e *env, planID string) StatusResult {
	t.Helper()
	rec, err := e.m.Status(tn.ctx, tn.session, planID)
	if err != nil {
		t.Fatalf("status %s: %v", planID, err)
	}
	return StatusOf(rec)
}

// Eight silent webhook receivers of one key hold webhook deliveries, never
// the step runners: another key's plan runs and completes while they still
// hold every request (finding: all plans of the host stopped for ~50 s).
func TestSilentWebhooksDoNotStopPlans(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", plans(func(c *Config) { c.Workers = 4 }), func(d *Deps) {
		d.Webhooks = NewWebhooks(WebhookConfig{Plans: withSecret(testSecret), Net: hostfn.NetPolicy{AllowPrivate: loopback, Timeout: 10 * time.Minute}})
	})
	alice, bob := mustTenant(t, e, "alice"), mustTenant(t, e, "bob")
	var hooks []*silentHook
	for i := range 8 {
		h := newSilentHook(t)
		hooks = append(hooks, h)
		alice.run(t, e, "hooked-"+string(rune('a'+i)), ExecuteOptions{Webhook: h.URL + "/hook"})
	}
	testutil.Eventually(t, 60*time.Second, "alice's 8 receivers to hold her webhooks", func() bool {
		for _, h := range hooks {
			if h.holding.Load() != 1 {
				return false
			}
		}
		return true
	})
	bob.run(t, e, "quick", ExecuteOptions{})
	testutil.Eventually(t, 60*time.Second, "bob's plan to complete", func() bool {
		return bob.status(t, e, "quick").Status == StatusCompleted
	})
	for i, h := range hooks {
		st := alice.status(t, e, "hooked-"+string(rune('a'+i)))
		if h.holding.Load() != 1 || st.Webhook == nil || st.Webhook.Status != WebhookPending {
			t.Errorf("alice's webhook %d: receiver holds %d, status %+v; want it still held and pending", i, h.holding.Load(), st.Webhook)
		}
	}
}

// A webhook that has not been delivered when its host stops (or crashes)
// is delivered by the next host on the same store, with the same delivery
// id; the attempts of both hosts are counted.
func TestWebhookSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		name := map[bool]string{false: "graceful", true: "crash"}[crash]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var accept atomic.Bool
			var mu sync.Mutex
			var deliveries []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !accept.Load() {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				mu.Lock()
				deliveries = append(deliveries, r.Header.Get(HeaderDelivery))
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(srv.Close)
			cfg := plans(func(c *Config) { c.AckWait = time.Second })
			hooks := func(d *Deps) {
				d.Webhooks = NewWebhooks(WebhookConfig{Plans: withSecret(testSecret), Backoff: time.Hour, // no second attempt on the first host
					Net: hostfn.NetPolicy{AllowPrivate: loopback, Timeout: 5 * time.Second}})
			}
			e := mustEnv(t, "", cfg, hooks)
			sess := mustSession(t, e)
			mustCreate(t, e, sess, "hooked", definition(step("a", "echo", `{}`)))
			rec := mustExecute(t, e, sess, "hooked", ExecuteOptions{Webhook: srv.URL + "/hook"})
			waitFor(t, e, sess, "hooked", "the first failed attempt", func(s StatusResult) bool {
				return s.Webhook != nil && s.Webhook.Attempts == 1
			})
			if crash {
				_ = e.st.Close()
				e.stop()
			} else {
				e.stop()
				_ = e.st.Close()
			}
			accept.Store(true)
			e2 := mustEnv(t, e.data, cfg, hooks)
			st := waitFor(t, e2, sess, "hooked", "the webhook", func(s StatusResult) bool {
				return s.Webhook != nil && s.Webhook.Status != WebhookPending
			})
			if st.Webhook.Status != WebhookDelivered || st.Webhook.Attempts != 2 {
				t.Errorf("webhook %+v, want delivered at the second attempt", st.Webhook)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(deliveries) != 1 || deliveries[0] != rec.ExecutionID {
				t.Errorf("deliveries %v, want one with id %s", deliveries, rec.ExecutionID)
			}
		})
	}
}

// A webhook's last_error names the refused rule and the host, never the
// address the host name resolved to.
func TestWebhookErrorShowsNoResolvedAddress(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{}, func(d *Deps) {
		d.Webhooks = NewWebhooks(WebhookConfig{Plans: withSecret(testSecret), Net: hostfn.NetPolicy{Timeout: 5 * time.Second}})
	})
	sess := mustSession(t, e)
	mustCreate(t, e, sess, "p", definition(step("a", "echo", `{}`)))
	mustExecute(t, e, sess, "p", ExecuteOptions{Webhook: "http://localhost:9/hook"})
	st := waitFor(t, e, sess, "p", "the webhook", func(s StatusResult) bool { return s.Webhook != nil && s.Webhook.Status != WebhookPending })
	if st.Webhook.LastError == nil {
		t.Fatalf("webhook %+v: no last_error", st.Webhook)
	}
	msg := *st.Webhook.LastError
	for _, want := range []string{`host "localhost"`, "loopback", "net.allow_private"} {
		if !strings.Contains(msg, want) {
			t.Errorf("last_error %q lacks %q", msg, want)
		}
	}
	for _, leak := range []string{"127.0.0.1", "::1"} {
		if strings.Contains(msg, leak) {
			t.Errorf("last_error %q shows the resolved address %s", msg, leak)
		}
	}
}
