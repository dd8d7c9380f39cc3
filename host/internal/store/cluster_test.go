package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
)

// openCluster opens a store with default settings on url (Open itself
// waits while the cluster elects its JetStream meta leader).
func openCluster(t *testing.T, url string) *store.Store {
	t.Helper()
	return mustOpenCluster(t, store.Config{URL: url})
}

func mustOpenCluster(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	st, err := store.Open(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", cfg.URL, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// wantReplicated fails unless each bucket's stream has want replicas and,
// when replicated, serves reads from its leader only.
func wantReplicated(t *testing.T, st *store.Store, want int, buckets ...string) {
	t.Helper()
	for _, bucket := range buckets {
		stream, err := st.JetStream().Stream(testCtx(t), "KV_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		cfg := stream.CachedInfo().Config
		if cfg.Replicas != want {
			t.Errorf("bucket %s replicas = %d, want %d", bucket, cfg.Replicas, want)
		}
		if want > 1 && cfg.AllowDirect {
			t.Errorf("bucket %s allows direct (follower) reads; want leader reads on a cluster", bucket)
		}
	}
}

func TestThreeNodeCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := natstest.Start(t, 3)
	writer := openCluster(t, c.URL())
	reader := openCluster(t, c.NodeURL(2))
	ctx := testCtx(t)

	// Every acknowledged write is visible at once through another node:
	// reads go to the stream leader, never to a lagging follower.
	for i := range 5 {
		id := fmt.Sprintf("clustered-%d", i)
		mustSession(t, writer, id)
		if _, err := reader.ActiveSession(ctx, id); err != nil {
			t.Errorf("other node, right after create: ActiveSession(%s): %v", id, err)
		}
		if _, err := writer.SetContext(ctx, id, "n", json.RawMessage(fmt.Sprint(i)), time.Hour); err != nil {
			t.Fatalf("SetContext: %v", err)
		}
		got, err := reader.GetContext(ctx, id, "n")
		if err != nil || string(got.Value) != fmt.Sprint(i) {
			t.Errorf("other node: GetContext(%s) = %s, %v", id, got.Value, err)
		}
		if i%2 == 0 {
			if _, err := writer.CloseSession(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := reader.ActiveSession(ctx, id); faultOf(t, err).Reason != fault.ReasonSessionClosed {
				t.Errorf("other node, right after close: ActiveSession(%s) = %v, want session_closed", id, err)
			}
		}
	}
	// With default settings the buckets, and one made through KeyValue
	// with Replicas 0, are replicated three ways.
	if writer.Replicas() != 3 || reader.Replicas() != 3 {
		t.Errorf("Replicas() = %d, %d; want 3 on a 3-node cluster by default", writer.Replicas(), reader.Replicas())
	}
	if _, err := reader.KeyValue(ctx, jetStreamCfg("skillhost_tasks_test")); err != nil {
		t.Fatal(err)
	}
	wantReplicated(t, reader, 3, store.SessionsBucket, store.ContextBucket, "skillhost_tasks_test")

	// The servers' max_payload (1 MiB by default) caps context values below
	// store.max_value (also 1 MiB): refused with an error naming the limit,
	// not a NATS error.
	mustSession(t, writer, "payload")
	big := json.RawMessage(`"` + strings.Repeat("x", int(config.Defaults().Store.MaxValue)-1024) + `"`)
	_, err := writer.SetContext(ctx, "payload", "big", big, 0)
	if got := faultOf(t, err); got.Reason != fault.ReasonValueTooLarge || !strings.Contains(err.Error(), "max_payload of 1048576 bytes") {
		t.Errorf("SetContext(1 MiB - 1 KiB) = %v; want value_too_large naming the server's max_payload", err)
	}
	fits := json.RawMessage(`"` + strings.Repeat("x", 900<<10) + `"`)
	if _, err := writer.SetContext(ctx, "payload", "fits", fits, 0); err != nil {
		t.Errorf("SetContext(900 KiB): %v", err)
	}
}

// An R1 bucket (an older default) is raised to three replicas by a start
// with default settings, data kept.
func TestClusterRaisesReplicas(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := natstest.Start(t, 3)
	ctx := testCtx(t)
	old, err := store.Open(ctx, store.Config{URL: c.URL(), Store: storeLimits(func(c *config.Store) { c.Replicas = 1 })})
	if err != nil {
		t.Fatal(err)
	}
	mustSession(t, old, "kept")
	if _, err := old.KeyValue(ctx, jetStreamCfg("skillhost_raise_test")); err != nil {
		t.Fatal(err)
	}
	wantReplicated(t, old, 1, store.SessionsBucket, store.ContextBucket, "skillhost_raise_test")
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	st := openCluster(t, c.URL())
	if _, err := st.KeyValue(ctx, jetStreamCfg("skillhost_raise_test")); err != nil {
		t.Fatal(err)
	}
	wantReplicated(t, st, 3, store.SessionsBucket, store.ContextBucket, "skillhost_raise_test")
	if _, err := st.ActiveSession(ctx, "kept"); err != nil {
		t.Errorf("session written before the raise: %v", err)
	}
}

// A host started before its cluster waits (logging each try) and comes up
// once the cluster is ready.
func TestOpenWaitsForCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := natstest.Prepare(t, 3) // ports known, nothing listening yet
	waiting := make(chan struct{}, 1)
	logger := slog.New(&signalHandler{msg: "store: JetStream not ready yet; retrying", ch: waiting})
	type opened struct {
		st  *store.Store
		err error
	}
	done := make(chan opened, 1)
	go func() {
		st, err := store.Open(testCtx(t), store.Config{URL: c.URL(), Logger: logger})
		done <- opened{st, err}
	}()
	select {
	case <-waiting:
	case res := <-done:
		t.Fatalf("Open returned before any NATS server was up: %v", res.err)
	case <-time.After(30 * time.Second):
		t.Fatal("Open logged no retry within 30s")
	}
	for i := range 3 {
		c.Restart(i)
	}
	var res opened
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Open did not return within 60s of the cluster starting")
	}
	if res.err != nil {
		t.Fatalf("Open: %v", res.err)
	}
	t.Cleanup(func() { _ = res.st.Close() })
	if res.st.Replicas() != 3 {
		t.Errorf("Replicas() = %d, want 3", res.st.Replicas())
	}
	mustSession(t, res.st, "after-wait")
}

// A start that cannot reach JetStream gives up after StartTimeout, saying so.
func TestOpenGivesUp(t *testing.T) {
	t.Parallel()
	port := natstest.FreePorts(t, 1)[0]
	_, err := store.Open(testCtx(t), store.Config{URL: fmt.Sprintf("nats://127.0.0.1:%d", port), Store: storeLimits(func(c *config.Store) { c.StartTimeout = time.Second })})
	if err == nil || !strings.Contains(err.Error(), "store.start_timeout") {
		t.Fatalf("Open with nothing listening = %v; want an error naming store.start_timeout", err)
	}
}

// signalHandler is a slog handler that signals ch whenever a record with
// message msg is logged.
type signalHandler struct {
	msg string
	ch  chan struct{}
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *signalHandler) WithGroup(string) slog.Handler            { return h }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
