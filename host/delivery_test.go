package host_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// Two keys on one host, over HTTP: alice's push configs point at a
// receiver that accepts and never answers, and she queues more updates
// than her share (delivery.max_pending_per_key). Bob's push still arrives,
// alice's receiver holds only its destination's slots, and /metrics and
// the log tell that alice's own updates were dropped.
func TestPushOfOneKeyDoesNotWaitForAnother(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	alice, bob := newKey(t, "alice", "*"), newKey(t, "bob", "*")
	th, logs := mustHostWith(t, dir, func(c *config.Config) {
		c.Auth.Keys = []config.AuthKey{alice.Entry, bob.Entry}
		c.Net.AllowPrivate = []string{"127.0.0.0/8"}
		c.A2A.Push.Timeout = 10 * time.Minute // the silent receiver holds its requests for the whole test
		c.Delivery.MaxPendingPerKey = 16
	})
	var holding atomic.Int32
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		holding.Add(1)
		defer holding.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); silent.Close() })
	send := func(key apiKey, url string) {
		params := map[string]any{
			"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"data": map[string]any{"text": "hi"}}},
				"metadata": map[string]any{"skillId": "echo"}},
			"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"url": url}},
		}
		th.mustAs(t, key.Secret, "SendMessage", params)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				send(alice, silent.URL)
			}
		})
	}
	wg.Wait() // alice: 20 tasks, 40 updates queued, 16 kept
	testutil.Eventually(t, 60*time.Second, "alice's receiver to hold 4 requests", func() bool { return holding.Load() == 4 })

	fast, got := mustReceiver(t)
	send(bob, fast)
	deadline := time.After(60 * time.Second)
	for done := false; !done; {
		select {
		case p := <-got:
			su, ok := p.event.(*a2av1.TaskStatusUpdateEvent)
			done = ok && su.Status.State == a2av1.TaskStateCompleted
		case <-deadline:
			t.Fatal("bob's push did not arrive")
		}
	}
	if n := holding.Load(); n != 4 {
		t.Errorf("alice's receiver holds %d requests, want delivery.concurrent_per_destination (4)", n)
	}
	testutil.Eventually(t, 30*time.Second, "the metrics to count alice's 24 drops and bob's 2 deliveries", func() bool {
		m := mustMetrics(t, th, bob.Secret)
		return sample(m, "skillhost_deliveries_dropped_total", map[string]string{"kind": "push"}) == 24 &&
			sample(m, "skillhost_deliveries_pending", map[string]string{"kind": "push"}) == 16 &&
			sample(m, "skillhost_deliveries_total", map[string]string{"kind": "push", "outcome": "delivered"}) == 2
	})
	if n := len(logs.lines(`"key":"key:alice"`, "too many deliveries waiting")); n != 1 {
		t.Errorf("%d log lines about alice's drops, want 1 for the burst", n)
	}
	if n := len(logs.lines(`"key":"key:bob"`, "too many deliveries waiting")); n != 0 {
		t.Errorf("bob's updates were dropped (%d log lines)", n)
	}
}
