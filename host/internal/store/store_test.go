package store_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

func TestOpenRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  store.Config
		want string
	}{
		{"no data dir", store.Config{}, "DataDir"},
		{"embedded replicas", store.Config{DataDir: "x", Store: storeLimits(func(c *config.Store) { c.Replicas = 3 })}, "store.replicas"},
		{"negative replicas", store.Config{URL: "nats://127.0.0.1:1", Store: storeLimits(func(c *config.Store) { c.Replicas = -1 })}, "store.replicas"},
		{"value cap too big", store.Config{DataDir: "x", Store: storeLimits(func(c *config.Store) { c.MaxValue = 64 << 20 })}, "store.max_value"},
		{"ttl cap too small", store.Config{DataDir: "x", Store: storeLimits(func(c *config.Store) { c.MaxContextTTL = time.Millisecond })}, "store.max_context_ttl"},
		{"bucket smaller than a value", store.Config{DataDir: "x", MaxBucketBytes: 10}, "MaxBucketBytes"},
		{"negative keys per session", store.Config{DataDir: "x", Store: storeLimits(func(c *config.Store) { c.MaxKeysPerSession = -1 })}, "store.max_keys_per_session"},
		{"too many keys per session", store.Config{DataDir: "x", Store: storeLimits(func(c *config.Store) { c.MaxKeysPerSession = store.MaxKeysPerSessionLimit + 1 })}, "store.max_keys_per_session"},
		{"session bytes below a value", store.Config{DataDir: "x", Store: storeLimits(func(c *config.Store) { c.MaxSessionBytes = 1000 })}, "store.max_session_bytes"},
		{"retention too short", store.Config{DataDir: "x", Store: storeLimits(func(c *config.Store) { c.ClosedSessionRetention = time.Millisecond })}, "store.closed_session_retention"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, err := store.Open(testCtx(t), tt.cfg)
			if err == nil {
				_ = st.Close()
				t.Fatalf("Open(%+v) succeeded", tt.cfg)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open error %q does not name %s", err, tt.want)
			}
		})
	}
}

func TestReopenKeepsStateAndLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := testCtx(t)
	st, err := store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	mustSession(t, st, "kept")
	if second, err := store.Open(ctx, store.Config{DataDir: dir}); err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "--data") {
		if second != nil {
			_ = second.Close()
		}
		t.Errorf("second Open on a data dir in use: %v; want an \"in use\" error", err)
	}
	set, err := st.SetContext(ctx, "kept", "k", json.RawMessage(` { "html" : "<b>&</b>" } `), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"html":"<b>&</b>"}`; string(set.Value) != want {
		t.Errorf("stored value %s, want compacted %s", set.Value, want)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "nats"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir layout: %v, %v; want DataDir/nats with mode 0700", fi, err)
	}

	st = mustOpen(t, store.Config{DataDir: dir})
	got, err := st.GetContext(ctx, "kept", "k")
	if err != nil {
		t.Fatalf("after reopen: %v", err)
	}
	if diff := cmp.Diff(string(set.Value), string(got.Value)); diff != "" {
		t.Errorf("value after reopen (-set +got):\n%s", diff)
	}
}

func TestBucketFullIsResourceExhausted(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{MaxBucketBytes: 16 << 10, Store: storeLimits(func(c *config.Store) { c.MaxValue = 1024 })})
	ctx := testCtx(t)
	id := mustSession(t, st, "filler").ID
	value := json.RawMessage(`"` + strings.Repeat("x", 1000) + `"`)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = st.SetContext(ctx, id, strings.Repeat("k", i+1), value, 0)
	}
	if diff := cmp.Diff(faultInfo{fault.ResourceExhausted, fault.ReasonStorageFull, id}, faultOf(t, err)); diff != "" {
		t.Errorf("writing past MaxBucketBytes (-want +got):\n%s", diff)
	}
}

func TestKeyValueCreateOrBind(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	kv, err := st.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "skillhost_tasks_test", History: 5})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := kv.Put(ctx, "t1", []byte("working")); err != nil {
		t.Fatal(err)
	}
	// Binding again with a different config keeps the bucket and its data.
	again, err := st.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "skillhost_tasks_test"})
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	e, err := again.Get(ctx, "t1")
	if err != nil || string(e.Value()) != "working" {
		t.Errorf("bound bucket Get = %v, %v", e, err)
	}
	status, err := again.Status(ctx)
	if err != nil || status.History() != 5 {
		t.Errorf("history after bind = %v, %v; want 5 (the stored config)", status, err)
	}
	if st.JetStream() == nil {
		t.Error("JetStream() is nil")
	}
}
