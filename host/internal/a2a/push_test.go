package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/a2a/push"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/delivery"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// pushHost is a test host whose push notifications go through a delivery
// service of its own, counted by real metrics. Receivers on 127.0.0.1 are
// allowed (as net.allow_private would); one POST may take 10 minutes, so a
// silent receiver holds its requests for the whole test.
type pushHost struct {
	*testHost
	push    *push.Service
	metrics *metrics.Metrics
	logs    *testutil.LogBuffer
}

func startPushHost(t *testing.T, dc delivery.Config) *pushHost {
	t.Helper()
	h := &pushHost{metrics: metrics.New(), logs: &testutil.LogBuffer{}}
	log := slog.New(slog.NewJSONHandler(h.logs, nil))
	guard := hostfn.NetPolicy{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: 10 * time.Minute}
	observer := metrics.NewDeliveries(h.metrics.Registry(), push.DeliveryKind)
	dc.Client, dc.Observer, dc.Logger = guard.Client(), observer, log
	svc := delivery.New(dc)
	observer.WatchPending(svc.Pending)
	ctx, cancel := context.WithCancel(context.Background())
	h.testHost = startHostWith(t, "testdata/plugins", store.Config{DataDir: t.TempDir()}, t.TempDir(), nil,
		func(st *store.Store, sc *a2a.ServiceConfig) {
			p, err := push.Open(ctx, st, push.Options{Delivery: svc, Net: guard, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			h.push, sc.Push = p, p
		})
	var wg sync.WaitGroup
	wg.Go(func() { svc.Run(ctx) })
	wg.Go(func() { h.push.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() }) // before the host's own cleanup closes the store
	return h
}

// metric reads one sample of the host's metrics ("name{labels} value").
func (h *pushHost) metric(t *testing.T, series string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return "absent"
}

// as is a context acting for a principal of its own (as an API key would).
func as(name string) context.Context { return auth.With(context.Background(), auth.Local(name)) }

// echoWithPush is an echo message whose task pushes to url.
func echoWithPush(url string) *a2av1.SendMessageRequest {
	req := skillMsg("echo", a2av1.NewDataPart(map[string]any{"text": "hi"}))
	if url != "" {
		req.Config = &a2av1.SendMessageConfig{PushConfig: &a2av1.PushConfig{URL: url}}
	}
	return req
}

// sendAll sends n messages made by req as who, 8 at a time.
func (h *pushHost) sendAll(t *testing.T, who string, n int, req func(i int) *a2av1.SendMessageRequest) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := h.svc.SendMessage(as(who), req(i)); err != nil {
				t.Errorf("%s's message %d: %v", who, i, err)
			}
		})
	}
	wg.Wait()
}

// silentPushes accepts push requests and answers none until the test ends.
func silentPushes(t *testing.T) (url string, holding *atomic.Int32) {
	t.Helper()
	holding = &atomic.Int32{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		holding.Add(1)
		defer holding.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL, holding
}

// pushReceiver hands the kind of every push it gets ("status:<state>",
// "artifact") to the returned channel.
func pushReceiver(t *testing.T) (string, <-chan string) {
	t.Helper()
	got := make(chan string, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var sr a2av1.StreamResponse
		if err := json.Unmarshal(b, &sr); err != nil {
			t.Errorf("push body %s: %v", b, err)
		}
		switch ev := sr.Event.(type) {
		case *a2av1.TaskStatusUpdateEvent:
			got <- "status:" + string(ev.Status.State)
		case *a2av1.TaskArtifactUpdateEvent:
			got <- "artifact"
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// receive returns the next n pushes (failing after a generous wait).
func receive(t *testing.T, got <-chan string, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(60 * time.Second)
	for len(out) < n {
		select {
		case p := <-got:
			out = append(out, p)
		case <-deadline:
			t.Fatalf("got pushes %v, want %d", out, n)
		}
	}
	return out
}

// Key alice's 90 push configs at a receiver that accepts and never answers
// hold only that receiver's slots: key bob's push arrives, in order, while
// alice's receiver still holds its requests (finding: four host-wide
// workers held bob's push for over 120 s).
func TestPushSilentReceiverHoldsOnlyItsDestination(t *testing.T) {
	t.Parallel()
	h := startPushHost(t, delivery.Config{})
	silent, holding := silentPushes(t)
	h.sendAll(t, "alice", 90, func(int) *a2av1.SendMessageRequest { return echoWithPush(silent) })
	testutil.Eventually(t, 60*time.Second, "alice's receiver to hold its destination's 4 slots", func() bool {
		return holding.Load() == int32(config.Defaults().Delivery.ConcurrentPerDestination)
	})
	fast, got := pushReceiver(t)
	if _, err := h.svc.SendMessage(as("bob"), echoWithPush(fast)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"artifact", "status:" + string(a2av1.TaskStateCompleted)}, receive(t, got, 2)); diff != "" {
		t.Errorf("bob's pushes (-want +got):\n%s", diff)
	}
	if n := holding.Load(); n != int32(config.Defaults().Delivery.ConcurrentPerDestination) {
		t.Errorf("alice's receiver holds %d requests, want %d", n, int32(config.Defaults().Delivery.ConcurrentPerDestination))
	}
	testutil.Eventually(t, 30*time.Second, "alice's 180 updates (2 × 90 tasks) alone pending", func() bool {
		return h.metric(t, `skillhost_deliveries_pending{kind="push"}`) == "180"
	})
}

// Tasks without push configs cost the push side nothing: 700 quick tasks
// are neither read nor queued (finding: every update of every task was
// queued, and 398 were dropped), while a task with a config is pushed.
func TestPushOnlyForTasksWithConfigs(t *testing.T) {
	t.Parallel()
	h := startPushHost(t, delivery.Config{})
	h.sendAll(t, "alice", 700, func(int) *a2av1.SendMessageRequest { return echoWithPush("") })
	if diff := cmp.Diff(push.Stats{Skipped: 700}, h.push.Stats()); diff != "" {
		t.Errorf("after 700 tasks without configs (-want +got):\n%s", diff)
	}
	fast, got := pushReceiver(t)
	if _, err := h.svc.SendMessage(as("bob"), echoWithPush(fast)); err != nil {
		t.Fatal(err)
	}
	receive(t, got, 2)
	if diff := cmp.Diff(push.Stats{Skipped: 700, Lookups: 1}, h.push.Stats()); diff != "" {
		t.Errorf("after bob's task with a config (-want +got):\n%s", diff)
	}
	testutil.Eventually(t, 30*time.Second, "bob's 2 deliveries counted", func() bool {
		return h.metric(t, `skillhost_deliveries_total{kind="push",outcome="delivered"}`) == "2"
	})
	if got := h.metric(t, `skillhost_deliveries_dropped_total{kind="push"}`); got != "0" {
		t.Errorf("%s pushes dropped, want 0", got)
	}
}

// Key alice flooding past her pending share loses only her own updates:
// bob's are delivered, the metrics count alice's drops, and the log names
// her once for the burst.
func TestPushFloodDropsOnlyTheFloodingKey(t *testing.T) {
	t.Parallel()
	h := startPushHost(t, delivery.Config{Delivery: deliveryLimits(func(c *config.Delivery) { c.MaxPendingPerKey = 20 }), DropLogEvery: time.Hour})
	silent, _ := silentPushes(t)
	h.sendAll(t, "alice", 50, func(int) *a2av1.SendMessageRequest { return echoWithPush(silent) })
	fast, got := pushReceiver(t)
	if _, err := h.svc.SendMessage(as("bob"), echoWithPush(fast)); err != nil {
		t.Fatal(err)
	}
	receive(t, got, 2)
	for series, want := range map[string]string{
		`skillhost_deliveries_dropped_total{kind="push"}`:             "80", // alice's 100 updates, 20 kept
		`skillhost_deliveries_pending{kind="push"}`:                   "20",
		`skillhost_deliveries_total{kind="push",outcome="delivered"}`: "2", // bob's
	} {
		testutil.Eventually(t, 30*time.Second, fmt.Sprintf("%s = %s", series, want), func() bool { return h.metric(t, series) == want })
	}
	logs := h.logs.String()
	if n := strings.Count(logs, `"key":"local:alice"`); n != 1 {
		t.Errorf("%d log lines about alice's drops, want one for the burst:\n%s", n, logs)
	}
	if strings.Contains(logs, `"key":"local:bob"`) {
		t.Errorf("bob's updates were dropped:\n%s", logs)
	}
}

// deliveryLimits is the default delivery.* section with edit applied.
func deliveryLimits(edit func(*config.Delivery)) config.Delivery {
	c := config.Defaults().Delivery
	edit(&c)
	return c
}
