package store_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// jsonString is a JSON string value of exactly n bytes (n ≥ 2).
func jsonString(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

// usage is a session's accounted context usage.
type usage struct {
	Keys  int
	Bytes int64
}

func mustUsage(t *testing.T, st *store.Store, id string) usage {
	t.Helper()
	keys, bytes, err := st.ContextUsage(testCtx(t), id)
	if err != nil {
		t.Fatalf("ContextUsage(%q): %v", id, err)
	}
	return usage{keys, bytes}
}

func mustSet(t *testing.T, st *store.Store, id, key string, value json.RawMessage, ttl time.Duration) {
	t.Helper()
	if _, err := st.SetContext(testCtx(t), id, key, value, ttl); err != nil {
		t.Fatalf("SetContext(%q, %q, %d bytes): %v", id, key, len(value), err)
	}
}

// A hostile session hits its own quota (session_quota), not the shared
// bucket's: every other session keeps writing.
func TestSessionQuotaProtectsOtherSessions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value json.RawMessage
	}{
		{"bytes cap", jsonString(256 << 10)},
		{"keys cap", json.RawMessage(`1`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := mustOpen(t, store.Config{MaxBucketBytes: 4 << 20, Store: storeLimits(func(c *config.Store) { c.MaxSessionBytes = 1 << 20; c.MaxKeysPerSession = 50 })})
			ctx := testCtx(t)
			hog, victim := mustSession(t, st, "hog").ID, mustSession(t, st, "victim").ID
			var err error
			n := 0
			for ; n < 1000 && err == nil; n++ {
				_, err = st.SetContext(ctx, hog, fmt.Sprint("k", n), tt.value, 0)
			}
			if diff := cmp.Diff(faultInfo{fault.ResourceExhausted, fault.ReasonSessionQuota, hog}, faultOf(t, err)); diff != "" {
				t.Fatalf("hog's write %d (-want +got):\n%s", n, diff)
			}
			got := mustUsage(t, st, hog)
			if got.Keys > 50 || got.Bytes > 1<<20 {
				t.Errorf("hog holds %+v, over the caps of 50 keys and 1 MiB", got)
			}
			mustSet(t, st, victim, "k", tt.value, 0)
			mustSet(t, st, hog, "k0", json.RawMessage(`"overwrite of a held key still works"`), 0)
		})
	}
}

// Overwrites count only the size difference; both caps are exact.
func TestSessionQuotaOverwriteAccounting(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{Store: storeLimits(func(c *config.Store) { c.MaxValue = 1024; c.MaxSessionBytes = 2048; c.MaxKeysPerSession = 4 })})
	ctx := testCtx(t)
	id := mustSession(t, st, "overwrite").ID

	for range 10 { // naive accounting would add 901 bytes each time
		mustSet(t, st, id, "a", jsonString(900), 0)
	}
	if diff := cmp.Diff(usage{1, 901}, mustUsage(t, st, id)); diff != "" {
		t.Errorf("after 10 overwrites (-want +got):\n%s", diff)
	}
	mustSet(t, st, id, "a", jsonString(10), time.Hour) // shrink
	mustSet(t, st, id, "b", jsonString(900), 0)
	mustSet(t, st, id, "c", jsonString(900), 0)
	if diff := cmp.Diff(usage{3, 11 + 901 + 901}, mustUsage(t, st, id)); diff != "" {
		t.Errorf("after shrink and two new keys (-want +got):\n%s", diff)
	}
	_, err := st.SetContext(ctx, id, "d", jsonString(900), 0)
	if diff := cmp.Diff(faultInfo{fault.ResourceExhausted, fault.ReasonSessionQuota, id}, faultOf(t, err)); diff != "" {
		t.Errorf("set over MaxSessionBytes (-want +got):\n%s", diff)
	}
	_, err = st.SetContext(ctx, id, "a", jsonString(1000), 0) // growing a by 990 does not fit either
	if diff := cmp.Diff(faultInfo{fault.ResourceExhausted, fault.ReasonSessionQuota, id}, faultOf(t, err)); diff != "" {
		t.Errorf("growing overwrite over MaxSessionBytes (-want +got):\n%s", diff)
	}
	if got, err := st.GetContext(ctx, id, "a"); err != nil || len(got.Value) != 10 {
		t.Errorf("refused overwrite changed the value: %d bytes, %v", len(got.Value), err)
	}
	mustSet(t, st, id, "b", jsonString(2), 0) // shrink b: now d fits
	mustSet(t, st, id, "d", jsonString(900), 0)
	_, err = st.SetContext(ctx, id, "e", jsonString(2), 0)
	if diff := cmp.Diff(faultInfo{fault.ResourceExhausted, fault.ReasonSessionQuota, id}, faultOf(t, err)); diff != "" {
		t.Errorf("fifth key over MaxKeysPerSession 4 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(usage{4, 11 + 3 + 901 + 901}, mustUsage(t, st, id)); diff != "" {
		t.Errorf("final usage (-want +got):\n%s", diff)
	}
}

// Expired values stop counting once the server has removed them.
func TestSessionQuotaFreedByExpiry(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{Store: storeLimits(func(c *config.Store) { c.MaxKeysPerSession = 2 })})
	ctx := testCtx(t)
	id := mustSession(t, st, "expiry").ID
	mustSet(t, st, id, "short", json.RawMessage(`1`), time.Second)
	mustSet(t, st, id, "long", json.RawMessage(`2`), 0)
	_, err := st.SetContext(ctx, id, "third", json.RawMessage(`3`), 0)
	if diff := cmp.Diff(faultInfo{fault.ResourceExhausted, fault.ReasonSessionQuota, id}, faultOf(t, err)); diff != "" {
		t.Fatalf("third key before expiry (-want +got):\n%s", diff)
	}
	testutil.Eventually(t, 15*time.Second, "the quota to be freed after a 1s ttl", func() bool {
		_, err = st.SetContext(ctx, id, "third", json.RawMessage(`3`), 0)
		return err == nil
	})
	if diff := cmp.Diff(usage{2, int64(len("long") + 1 + len("third") + 1)}, mustUsage(t, st, id)); diff != "" {
		t.Errorf("usage after expiry (-want +got):\n%s", diff)
	}
}

// Closing a session frees its quota; once the closed record's retention has
// passed the id may be reused and starts with an empty quota.
func TestSessionQuotaFreedByCloseAndIDReuse(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{Store: storeLimits(func(c *config.Store) { c.MaxKeysPerSession = 3; c.ClosedSessionRetention = time.Second })})
	ctx := testCtx(t)
	if _, err := st.CreateSession(ctx, store.Session{ID: "reused", Context: json.RawMessage(`{"big":"initial"}`)}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		mustSet(t, st, "reused", k, json.RawMessage(`1`), 0)
	}
	if _, err := st.CloseSession(ctx, "reused"); err != nil {
		t.Fatal(err)
	}
	tomb, err := st.Session(ctx, "reused")
	if err != nil || tomb.Status != store.StatusClosed || tomb.Context != nil {
		t.Errorf("closed record = %+v, %v; want closed, without the initial context", tomb, err)
	}
	_, err = st.CreateSession(ctx, store.Session{ID: "reused"})
	if diff := cmp.Diff(faultInfo{fault.InvalidState, fault.ReasonSessionClosed, "reused"}, faultOf(t, err)); diff != "" {
		t.Errorf("reuse within retention (-want +got):\n%s", diff)
	}
	testutil.Eventually(t, 15*time.Second, "the id to be reusable after a 1s retention", func() bool {
		_, err = st.CreateSession(ctx, store.Session{ID: "reused"})
		return err == nil
	})
	if diff := cmp.Diff(usage{}, mustUsage(t, st, "reused")); diff != "" {
		t.Errorf("usage of the reused id (-want +got):\n%s", diff)
	}
	for _, k := range []string{"d", "e", "f"} {
		mustSet(t, st, "reused", k, json.RawMessage(`1`), 0)
	}
	if _, err := st.GetContext(ctx, "reused", "a"); faultOf(t, err).Reason != fault.ReasonContextNotFound {
		t.Errorf("the closed session's value is visible to the new one: %v", err)
	}
}

// The quota is stored with the data: a restart does not reset it.
func TestSessionQuotaSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := store.Config{DataDir: dir, Store: storeLimits(func(c *config.Store) { c.MaxKeysPerSession = 2 })}
	st, err := store.Open(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustSession(t, st, "restart")
	mustSet(t, st, "restart", "a", json.RawMessage(`1`), 0)
	mustSet(t, st, "restart", "b", json.RawMessage(`1`), 0)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = mustOpen(t, cfg)
	_, err = st.SetContext(testCtx(t), "restart", "c", json.RawMessage(`1`), 0)
	if diff := cmp.Diff(faultInfo{fault.ResourceExhausted, fault.ReasonSessionQuota, "restart"}, faultOf(t, err)); diff != "" {
		t.Errorf("third key after restart (-want +got):\n%s", diff)
	}
}

// Concurrent sets on one session, new keys and racing grow/shrink
// overwrites of the same keys, never take it past either cap, and once they
// finish the accounted usage is exactly what is stored.
func TestSessionQuotaConcurrentSets(t *testing.T) {
	t.Parallel()
	const maxKeys, maxBytes = 8, 8 << 10
	st := mustOpen(t, store.Config{Store: storeLimits(func(c *config.Store) {
		c.MaxValue = 2 << 10
		c.MaxSessionBytes = maxBytes
		c.MaxKeysPerSession = maxKeys
	})})
	ctx := testCtx(t)
	id := mustSession(t, st, "concurrent").ID
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := range 12 {
		wg.Go(func() {
			for i := range 20 {
				key := keys[(w+i)%len(keys)]
				size := 2 + (w*7919+i*104729)%(2<<10-2) // sizes from 2 bytes to 2 KiB
				_, err := st.SetContext(ctx, id, key, jsonString(size), 0)
				if f := faultOf(t, err); err != nil && f.Reason != fault.ReasonSessionQuota {
					errs <- fmt.Errorf("SetContext(%s, %d bytes): %w", key, size, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var stored usage
	for _, key := range keys {
		got, err := st.GetContext(ctx, id, key)
		if faultOf(t, err).Reason == fault.ReasonContextNotFound {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		stored.Keys++
		stored.Bytes += int64(len(key) + len(got.Value))
	}
	if stored.Keys > maxKeys || stored.Bytes > maxBytes || stored.Keys == 0 {
		t.Errorf("stored %+v: want 1..%d keys and at most %d bytes", stored, maxKeys, maxBytes)
	}
	if diff := cmp.Diff(stored, mustUsage(t, st, id)); diff != "" {
		t.Errorf("accounted usage differs from what is stored (-stored +accounted):\n%s", diff)
	}
}
