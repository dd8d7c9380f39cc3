package plan

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// receiver is a webhook endpoint on 127.0.0.1 that checks signatures and
// fails the first `failFirst` deliveries with HTTP 503.
type receiver struct {
	mu        sync.Mutex
	failFirst int
	calls     int
	bodies    [][]byte
	headers   []http.Header
	badSig    int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if Sign([]byte(testSecret), req.Header.Get(HeaderTimestamp), body) != req.Header.Get(HeaderSignature) {
		r.badSig++
	}
	if r.calls <= r.failFirst {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	w.WriteHeader(http.StatusNoContent)
}

func TestWebhookDeliversTheSignedFinalStatus(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	rcv := &receiver{failFirst: 1}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	sess := mustSession(t, e)
	mustCreate(t, e, sess, "hooked", definition(step("a", "echo", `{"done":true}`)))
	rec := mustExecute(t, e, sess, "hooked", ExecuteOptions{Webhook: srv.URL + "/hook?x=1"})
	st := waitFor(t, e, sess, "hooked", "the webhook", func(s StatusResult) bool {
		return s.Webhook != nil && s.Webhook.Status != WebhookPending
	})
	if st.Webhook.Status != WebhookDelivered || st.Webhook.Attempts != 2 || st.Webhook.LastError != nil {
		t.Fatalf("webhook %+v", st.Webhook)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.badSig != 0 || len(rcv.bodies) != 1 {
		t.Fatalf("%d bad signatures, %d bodies", rcv.badSig, len(rcv.bodies))
	}
	var got StatusResult
	if err := json.Unmarshal(rcv.bodies[0], &got); err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusCompleted || string(got.Result) != `{"done":true}` || got.Webhook != nil || got.PlanID != "hooked" {
		t.Errorf("body %s", rcv.bodies[0])
	}
	h := rcv.headers[0]
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)) > time.Minute {
		t.Errorf("timestamp %q", h.Get(HeaderTimestamp))
	}
	if diff := cmp.Diff([]string{rec.ExecutionID, "plan.completed", "application/json"},
		[]string{h.Get(HeaderDelivery), h.Get(HeaderEvent), h.Get("Content-Type")}); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if strings.Contains(string(rcv.bodies[0]), testSecret) {
		t.Error("the body carries the secret")
	}
}

func TestWebhookGuards(t *testing.T) {
	t.Parallel()
	noPrivate := mustEnv(t, "", Config{}, func(d *Deps) {
		d.Webhooks = NewWebhooks(WebhookConfig{Plans: withSecret(testSecret), Net: hostfn.NetPolicy{Timeout: 5 * time.Second}, Backoff: 10 * time.Millisecond})
	})
	noSecret := mustEnv(t, "", Config{}, func(d *Deps) {
		d.Webhooks = NewWebhooks(WebhookConfig{Net: hostfn.NetPolicy{AllowPrivate: loopback, Timeout: 5 * time.Second}})
	})
	ctx := localCtx()
	tests := []struct {
		name   string
		e      *env
		opts   ExecuteOptions
		reason string
	}{
		{"loopback literal", noPrivate, ExecuteOptions{Webhook: "http://127.0.0.1:9/x"}, "loopback"},
		{"metadata address", noPrivate, ExecuteOptions{Webhook: "http://169.254.169.254/latest"}, "cloud metadata"},
		{"not http", noPrivate, ExecuteOptions{Webhook: "file:///etc/passwd"}, "http or https"},
		{"user info", noPrivate, ExecuteOptions{Webhook: "http://u:p@example.com/"}, "user info"},
		{"no secret", noSecret, ExecuteOptions{Webhook: "http://127.0.0.1:9/x"}, "signing secret"},
		{"short secret", noSecret, ExecuteOptions{Webhook: "http://127.0.0.1:9/x", WebhookSecret: "short"}, "webhook_secret must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sess := mustSession(t, tt.e)
			mustCreate(t, tt.e, sess, "p", definition(step("a", "echo", `{}`)))
			_, err := tt.e.m.Execute(ctx, sess, "p", tt.opts)
			fe := testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonInvalidParams)
			if !strings.Contains(fe.Msg, tt.reason) {
				t.Errorf("message %q, want it to mention %q", fe.Msg, tt.reason)
			}
		})
	}
	// A host name that resolves to loopback passes plan/execute but is
	// refused by the dial guard on the address dialed: never retried.
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	sess := mustSession(t, noPrivate)
	mustCreate(t, noPrivate, sess, "p", definition(step("a", "echo", `{}`)))
	mustExecute(t, noPrivate, sess, "p", ExecuteOptions{Webhook: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)})
	st := waitFor(t, noPrivate, sess, "p", "the webhook", func(s StatusResult) bool { return s.Webhook != nil && s.Webhook.Status != WebhookPending })
	if st.Webhook.Status != WebhookFailed || st.Webhook.Attempts != 1 || st.Webhook.LastError == nil || !strings.Contains(*st.Webhook.LastError, "refused") {
		t.Errorf("webhook %+v", st.Webhook)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.calls != 0 {
		t.Errorf("the receiver on loopback got %d calls", rcv.calls)
	}
}
