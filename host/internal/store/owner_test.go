package store_test

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

func ownedBy(owner string) func(string) bool { return func(o string) bool { return o == owner } }

// One owner cannot see, use or close another's session: it is reported
// exactly as a missing one, whatever its status.
func TestOwnedSessionHidesOthers(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	if _, err := st.CreateOwnedSession(ctx, store.Session{ID: "a-open", Owner: "key:a"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOwnedSession(ctx, store.Session{ID: "a-closed", Owner: "key:a"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CloseOwnedSession(ctx, "a-closed", ownedBy("key:a")); err != nil {
		t.Fatal(err)
	}
	missing := faultInfo{Kind: fault.SessionNotFound, Reason: fault.ReasonSessionNotFound, SessionID: "a-open"}
	tests := []struct {
		name string
		got  error
		want faultInfo
	}{
		{"owner reads its session", second(st.OwnedSession(ctx, "a-open", ownedBy("key:a"))), faultInfo{}},
		{"other owner reads it", second(st.OwnedSession(ctx, "a-open", ownedBy("key:b"))), missing},
		{"other owner closes it", second(st.CloseOwnedSession(ctx, "a-open", ownedBy("key:b"))), missing},
		{"owner reads its closed session", second(st.OwnedSession(ctx, "a-closed", ownedBy("key:a"))),
			faultInfo{Kind: fault.SessionNotFound, Reason: fault.ReasonSessionClosed, SessionID: "a-closed"}},
		{"other owner reads a closed session", second(st.OwnedSession(ctx, "a-closed", ownedBy("key:b"))),
			faultInfo{Kind: fault.SessionNotFound, Reason: fault.ReasonSessionNotFound, SessionID: "a-closed"}},
		{"missing session", second(st.OwnedSession(ctx, "nope", ownedBy("key:b"))),
			faultInfo{Kind: fault.SessionNotFound, Reason: fault.ReasonSessionNotFound, SessionID: "nope"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, faultOf(t, tt.got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	if _, err := st.OwnedSession(ctx, "a-open", ownedBy("key:a")); err != nil {
		t.Errorf("a refused close by another owner closed the session: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// The open-session cap counts per owner, frees a slot on close, and drops
// ids the index still lists although their session is gone.
func TestOpenSessionCap(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	const max = 2
	for _, id := range []string{"s1", "s2"} {
		if _, err := st.CreateOwnedSession(ctx, store.Session{ID: id, Owner: "key:a"}, max); err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.CreateOwnedSession(ctx, store.Session{ID: "s3", Owner: "key:a"}, max)
	if got := faultOf(t, err); got.Kind != fault.ResourceExhausted || got.Reason != fault.ReasonKeyQuota {
		t.Fatalf("third session: %+v (%v), want key_quota", got, err)
	}
	if _, err := st.CreateOwnedSession(ctx, store.Session{ID: "b1", Owner: "key:b"}, max); err != nil {
		t.Fatalf("another owner is not capped by a's sessions: %v", err)
	}
	if _, err := st.CloseOwnedSession(ctx, "s1", ownedBy("key:a")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOwnedSession(ctx, store.Session{ID: "s3", Owner: "key:a"}, max); err != nil {
		t.Fatalf("after a close: %v", err)
	}
	open, err := st.OwnerSessions(ctx, "key:a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s2", "s3"}, open); diff != "" {
		t.Errorf("open sessions (-want +got):\n%s", diff)
	}

	// A crash between closing a session and updating the index leaves a
	// stale id: write one, and the next create at the cap drops it.
	kv, err := st.KeyValue(ctx, jetStreamCfg(store.SessionsBucket))
	if err != nil {
		t.Fatal(err)
	}
	key := "owners." + base64.RawURLEncoding.EncodeToString([]byte("key:c"))
	if _, err := kv.Put(ctx, key, []byte(`{"open":["gone-1","gone-2"]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOwnedSession(ctx, store.Session{ID: "c1", Owner: "key:c"}, max); err != nil {
		t.Fatalf("stale ids were counted: %v", err)
	}
}
