package store_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func TestContextSetGet(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	id := mustSession(t, st, "ctx-set-get").ID

	keys := []string{"user", "a.b.c", "with space/and*wild>cards", "ünïcödé ✓", strings.Repeat("k", 256)}
	for i, key := range keys {
		value := json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`)
		set, err := st.SetContext(ctx, id, key, value, 0)
		if err != nil {
			t.Fatalf("SetContext(%q): %v", key, err)
		}
		if set.ExpiresAt != nil {
			t.Errorf("ttl 0 gave expires_at %v", set.ExpiresAt)
		}
		got, err := st.GetContext(ctx, id, key)
		if err != nil {
			t.Fatalf("GetContext(%q): %v", key, err)
		}
		if diff := cmp.Diff(set, got, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
			t.Errorf("GetContext(%q) (-set +got):\n%s", key, diff)
		}
	}

	// Overwrite replaces, including switching from a ttl to none and back.
	for _, ttl := range []time.Duration{time.Hour, 0, 90 * time.Minute} {
		if _, err := st.SetContext(ctx, id, "user", json.RawMessage(`"v`+ttl.String()+`"`), ttl); err != nil {
			t.Fatalf("overwrite with ttl %v: %v", ttl, err)
		}
		got, err := st.GetContext(ctx, id, "user")
		if err != nil {
			t.Fatalf("GetContext after overwrite: %v", err)
		}
		if string(got.Value) != `"v`+ttl.String()+`"` || (ttl == 0) != (got.ExpiresAt == nil) {
			t.Errorf("after overwrite with ttl %v: value %s expires_at %v", ttl, got.Value, got.ExpiresAt)
		}
	}

	_, err := st.GetContext(ctx, id, "never-set")
	if diff := cmp.Diff(faultInfo{fault.InvalidParams, fault.ReasonContextNotFound, id}, faultOf(t, err)); diff != "" {
		t.Errorf("missing key (-want +got):\n%s", diff)
	}
}

func TestContextTTLExpires(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	id := mustSession(t, st, "ctx-ttl").ID
	set, err := st.SetContext(ctx, id, "short", json.RawMessage(`"soon gone"`), time.Second)
	if err != nil {
		t.Fatalf("SetContext: %v", err)
	}
	if set.ExpiresAt == nil || set.ExpiresAt.Sub(set.SetAt) != time.Second {
		t.Errorf("expires_at %v set_at %v: want set_at+1s", set.ExpiresAt, set.SetAt)
	}
	if _, err := st.SetContext(ctx, id, "long", json.RawMessage(`"stays"`), time.Hour); err != nil {
		t.Fatalf("SetContext long: %v", err)
	}

	if _, err := st.SetContext(ctx, id, "unread", json.RawMessage(`"purged by the server"`), time.Second); err != nil {
		t.Fatalf("SetContext unread: %v", err)
	}

	var last error
	testutil.Eventually(t, 10*time.Second, "the 1s value to expire", func() bool {
		_, last = st.GetContext(ctx, id, "short")
		return last != nil
	})
	got := faultOf(t, last)
	if got.Kind != fault.InvalidParams || (got.Reason != fault.ReasonContextExpired && got.Reason != fault.ReasonContextNotFound) {
		t.Fatalf("expired value: got %+v (%v), want InvalidParams context_expired or context_not_found", got, last)
	}
	// Once seen expired it is deleted: later reads say not found, never the value.
	_, err = st.GetContext(ctx, id, "short")
	if diff := cmp.Diff(faultInfo{fault.InvalidParams, fault.ReasonContextNotFound, id}, faultOf(t, err)); diff != "" {
		t.Errorf("read after expiry (-want +got):\n%s", diff)
	}
	if _, err := st.GetContext(ctx, id, "long"); err != nil {
		t.Errorf("unexpired value lost: %v", err)
	}

	// The server's per-key TTL removes a value nobody reads: the raw bucket
	// holds only "long" once it fires.
	kv, err := st.KeyValue(ctx, jetStreamCfg(store.ContextBucket))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if !testutil.Poll(15*time.Second, func() bool { keys = mustKeys(t, kv); return len(keys) == 1 }) {
		t.Errorf("bucket keys after server TTL: %q, want only the unexpired one", keys)
	}
}

func TestContextIsolatedPerSession(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	// "a" and "a.b" would collide under naive "<session>.<key>" keys.
	a, ab := mustSession(t, st, "a").ID, mustSession(t, st, "a.b").ID
	if _, err := st.SetContext(ctx, a, "b.secret", json.RawMessage(`"a's"`), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetContext(ctx, ab, "secret", json.RawMessage(`"ab's"`), 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ session, key, want string }{
		{a, "b.secret", `"a's"`}, {ab, "secret", `"ab's"`},
	} {
		got, err := st.GetContext(ctx, tc.session, tc.key)
		if err != nil || string(got.Value) != tc.want {
			t.Errorf("GetContext(%s, %s) = %s, %v; want %s", tc.session, tc.key, got.Value, err, tc.want)
		}
	}
	_, err := st.GetContext(ctx, ab, "b.secret")
	if diff := cmp.Diff(faultInfo{fault.InvalidParams, fault.ReasonContextNotFound, ab}, faultOf(t, err)); diff != "" {
		t.Errorf("other session's key visible (-want +got):\n%s", diff)
	}

	// Closing a purges a's values only; b's survive.
	if _, err := st.CloseSession(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetContext(ctx, ab, "secret"); err != nil || string(got.Value) != `"ab's"` {
		t.Errorf("closing %q touched %q: %s, %v", a, ab, got.Value, err)
	}
	kv, err := st.KeyValue(ctx, jetStreamCfg(store.ContextBucket))
	if err != nil {
		t.Fatal(err)
	}
	if keys := mustKeys(t, kv); len(keys) != 1 {
		t.Errorf("context bucket holds %q after closing %q, want 1 key (only %q's)", keys, a, ab)
	}
}

func TestHostileInputs(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{Store: storeLimits(func(c *config.Store) { c.MaxValue = 1024; c.MaxContextTTL = time.Hour })})
	ctx := testCtx(t)
	id := mustSession(t, st, "hostile").ID
	longID := strings.Repeat("x", 10_000)
	bad := func(reason string) faultInfo { return faultInfo{fault.InvalidParams, reason, id} }
	tests := []struct {
		name string
		call func() error
		want faultInfo
	}{
		{"10k-char session id", func() error { _, err := st.CreateSession(ctx, store.Session{ID: longID}); return err },
			faultInfo{fault.InvalidParams, fault.ReasonInvalidParams, longID[:128] + "…"}},
		{"session id with space", func() error { _, err := st.CreateSession(ctx, store.Session{ID: "a b"}); return err },
			faultInfo{fault.InvalidParams, fault.ReasonInvalidParams, "a b"}},
		{"session id with wildcard", func() error { _, err := st.ActiveSession(ctx, "a.>"); return err },
			faultInfo{fault.InvalidParams, fault.ReasonInvalidParams, "a.>"}},
		{"huge session context", func() error {
			_, err := st.CreateSession(ctx, store.Session{ID: "big", Context: json.RawMessage(`"` + strings.Repeat("x", 2048) + `"`)})
			return err
		}, faultInfo{fault.InvalidParams, fault.ReasonValueTooLarge, "big"}},
		{"huge value", func() error {
			_, err := st.SetContext(ctx, id, "k", json.RawMessage(`"`+strings.Repeat("x", 1<<20)+`"`), 0)
			return err
		}, bad(fault.ReasonValueTooLarge)},
		{"value not JSON", func() error { _, err := st.SetContext(ctx, id, "k", json.RawMessage(`{nope`), 0); return err }, bad(fault.ReasonInvalidParams)},
		{"empty value", func() error { _, err := st.SetContext(ctx, id, "k", nil, 0); return err }, bad(fault.ReasonInvalidParams)},
		{"empty key", func() error { _, err := st.SetContext(ctx, id, "", json.RawMessage(`1`), 0); return err }, bad(fault.ReasonInvalidParams)},
		{"257-byte key", func() error { _, err := st.GetContext(ctx, id, strings.Repeat("k", 257)); return err }, bad(fault.ReasonInvalidParams)},
		{"invalid UTF-8 key", func() error { _, err := st.SetContext(ctx, id, "\xff\xfe", json.RawMessage(`1`), 0); return err }, bad(fault.ReasonInvalidParams)},
		{"negative ttl", func() error { _, err := st.SetContext(ctx, id, "k", json.RawMessage(`1`), -time.Second); return err }, bad(fault.ReasonInvalidParams)},
		{"ttl over max", func() error { _, err := st.SetContext(ctx, id, "k", json.RawMessage(`1`), 2*time.Hour); return err }, bad(fault.ReasonInvalidParams)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, faultOf(t, tt.call())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// A value exactly at the limit is accepted.
	exact := json.RawMessage(`"` + strings.Repeat("x", 1022) + `"`)
	if _, err := st.SetContext(ctx, id, "exact", exact, 0); err != nil {
		t.Errorf("value of exactly MaxValueBytes refused: %v", err)
	}
}
