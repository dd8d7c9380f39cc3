package a2a

import (
	"context"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// A context maps to one session per principal; once idle past its expiry
// the sweep closes it (and its session), and the next use starts anew.
func TestContextsIdleExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const idle = time.Second
	c, err := OpenContexts(ctx, st, idle, nil)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := auth.Local("alice"), auth.Local("bob")
	first, err := c.session(ctx, alice, "ctx-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.session(ctx, alice, "ctx-1", 0)
	if err != nil || again != first {
		t.Fatalf("same context: session %q (%v), want %q", again, err, first)
	}
	other, err := c.session(ctx, bob, "ctx-1", 0)
	if err != nil || other == first {
		t.Fatalf("another principal's same contextId: session %q (%v), want a new one", other, err)
	}
	if n, err := c.sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep of fresh contexts closed %d (%v)", n, err)
	}
	closed := 0
	if !testutil.PollEvery(30*time.Second, 100*time.Millisecond, func() bool {
		n, err := c.sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		closed += n
		return closed >= 2
	}) {
		t.Fatalf("idle contexts not swept after 30s (%d closed)", closed)
	}
	if s, err := st.Session(ctx, first); err != nil || s.Status != store.StatusClosed {
		t.Errorf("the idle context's session: %+v, %v; want closed", s, err)
	}
	fresh, err := c.session(ctx, alice, "ctx-1", 0)
	if err != nil || fresh == first {
		t.Errorf("after expiry: session %q (%v), want a new one", fresh, err)
	}
}
