package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
)

func owns(owner string) func(string) bool { return func(o string) bool { return o == owner } }

// Embedded, the cache serves the gate and a close is seen at once.
func TestSessionGateEmbedded(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	st := mustOpen(t, store.Config{})
	if _, err := st.CreateSession(ctx, store.Session{ID: "s1", Owner: "alice", Context: []byte(`{"big":"context"}`), TokenSHA256: "ab"}); err != nil {
		t.Fatal(err)
	}
	for range 3 { // a miss, then hits
		got, err := st.OwnedSession(ctx, "s1", owns("alice"))
		if err != nil {
			t.Fatal(err)
		}
		want := store.Session{ID: "s1", Owner: "alice", Status: store.StatusActive, TokenSHA256: "ab", CreatedAt: got.CreatedAt}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("OwnedSession (-want +got):\n%s", diff)
		}
	}
	if _, err := st.OwnedSession(ctx, "s1", owns("mallory")); faultOf(t, err).Reason != fault.ReasonSessionNotFound {
		t.Errorf("another owner's cached session: %v, want session_not_found", err)
	}
	if _, err := st.CloseSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	for _, read := range []func() error{
		func() error { _, err := st.OwnedSession(ctx, "s1", owns("alice")); return err },
		func() error { _, err := st.ActiveSession(ctx, "s1"); return err },
	} {
		if got := faultOf(t, read()); got.Reason != fault.ReasonSessionClosed {
			t.Errorf("after close: %+v, want session_closed", got)
		}
	}
	sess, err := st.CachedSession(ctx, "s1")
	if err != nil || sess.Status != store.StatusClosed {
		t.Errorf("CachedSession after close: %+v, %v; want the closed record", sess, err)
	}
}

// On a cluster, once a close on host A returns, host B refuses the session
// although B had it cached: every B read that starts after A's close
// returned is refused, however B's reads interleave with the close.
func TestSessionGateAcrossHosts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	const lease = 400 * time.Millisecond
	c := natstest.Start(t, 1)
	a := mustOpenCluster(t, store.Config{URL: c.URL(), SessionLease: lease})
	b := mustOpenCluster(t, store.Config{URL: c.URL(), SessionLease: lease})
	ctx := testCtx(t)
	for _, id := range []string{"quiet", "busy"} {
		if _, err := a.CreateSession(ctx, store.Session{ID: id, Owner: "alice"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.OwnedSession(ctx, id, owns("alice")); err != nil { // cached on B
			t.Fatal(err)
		}
	}

	t.Run("cached, then closed on the other host", func(t *testing.T) {
		start := time.Now()
		if _, err := a.CloseSession(ctx, "quiet"); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < lease {
			t.Errorf("close returned after %v, before the lease (%v) of other hosts' caches ran out", took, lease)
		}
		if _, err := b.OwnedSession(ctx, "quiet", owns("alice")); faultOf(t, err).Reason != fault.ReasonSessionClosed {
			t.Errorf("host B after the close on A returned: %v, want session_closed", err)
		}
	})

	t.Run("read continuously while closed", func(t *testing.T) {
		type read struct {
			start time.Time
			err   error
		}
		var (
			mu    sync.Mutex
			reads []read
			stop  = make(chan struct{})
			done  = make(chan struct{})
		)
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				_, err := b.OwnedSession(ctx, "busy", owns("alice"))
				mu.Lock()
				reads = append(reads, read{t0, err})
				mu.Unlock()
			}
		}()
		if _, err := a.CloseSession(ctx, "busy"); err != nil {
			t.Fatal(err)
		}
		closed := time.Now()
		time.AfterFunc(200*time.Millisecond, func() { close(stop) })
		<-done
		var before, after int
		for _, r := range reads {
			if !r.start.After(closed) {
				before++
				continue
			}
			after++
			if faultOf(t, r.err).Reason != fault.ReasonSessionClosed {
				t.Fatalf("a read on B started %v after the close returned got %v", r.start.Sub(closed), r.err)
			}
		}
		if before == 0 || after == 0 {
			t.Fatalf("reads before/after the close: %d/%d; want both", before, after)
		}
	})
}
