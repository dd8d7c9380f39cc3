package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func mustLeases(t *testing.T, st *store.Store, ttl time.Duration) *store.Leases {
	t.Helper()
	l, err := st.OpenLeases(testCtx(t), store.LeasesConfig{Name: "TEST_LEASES", Subject: "test.leases", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustLapsed(t *testing.T, l *store.Leases, boot string) bool {
	t.Helper()
	lapsed, err := l.Lapsed(testCtx(t), boot)
	if err != nil {
		t.Fatalf("Lapsed(%s): %v", boot, err)
	}
	return lapsed
}

// TestLeasesHeldAndDropped: every boot's leases are listed by any host,
// held once however often a name is held again, and gone when dropped (by
// the boot or by another host).
func TestLeasesHeldAndDropped(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 1)
	a, b := openCluster(t, c.URL()), openCluster(t, c.URL())
	la, lb := mustLeases(t, a, time.Hour), mustLeases(t, b, time.Hour)
	ctx := testCtx(t)
	for _, n := range []string{"s.owner1.task1", "l.owner1.task2", "s.owner1.task1"} {
		if err := la.Hold(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := lb.HoldNoWait("s.owner2.task3"); err != nil {
		t.Fatal(err)
	}
	if err := lb.Hold(ctx, "bad.*.name"); err == nil {
		t.Error("a name with a wildcard was held")
	}
	want := map[string][]string{a.Boot(): {"l.owner1.task2", "s.owner1.task1"}, b.Boot(): {"s.owner2.task3"}}
	testutil.Eventually(t, 10*time.Second, "every lease listed", func() bool {
		got, err := lb.Held(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, names := range got {
			slices.Sort(names)
		}
		return cmp.Diff(want, got) == ""
	})
	if err := la.Drop(ctx, a.Boot(), "s.owner1.task1"); err != nil {
		t.Fatal(err)
	}
	if err := la.Drop(ctx, b.Boot(), "s.owner2.task3"); err != nil { // another boot's, as a sweeper drops it
		t.Fatal(err)
	}
	got, err := la.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{a.Boot(): {"l.owner1.task2"}}, got); diff != "" {
		t.Errorf("after the drops (-want +got):\n%s", diff)
	}
}

// TestLeasesLapse: a boot's leases lapse at once when it releases them,
// and come back with its next beat; a boot that stopped beating lapses
// after the TTL once it no longer answers, and never while it answers.
func TestLeasesLapse(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 1)
	a, b := openCluster(t, c.URL()), openCluster(t, c.URL())
	la := mustLeases(t, a, time.Hour)
	lb := mustLeases(t, b, time.Nanosecond) // every unchanged beat is stale at the next look
	ctx := testCtx(t)
	if err := la.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	first := mustLapsed(t, lb, a.Boot()) // starts watching the beat
	if first || mustLapsed(t, lb, a.Boot()) {
		t.Error("a boot that answers lapsed although it beat")
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !mustLapsed(t, lb, a.Boot()) || !mustLapsed(t, la, a.Boot()) {
		t.Error("released leases did not lapse at once (for the other boot and for itself)")
	}
	if err := la.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if mustLapsed(t, lb, a.Boot()) || mustLapsed(t, la, a.Boot()) {
		t.Error("a beat after the release did not take the leases back")
	}
	gone := a.Boot()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the closed boot's leases to lapse", func() bool {
		return mustLapsed(t, lb, gone)
	})
	if mustLapsed(t, lb, b.Boot()) {
		t.Error("a boot's own leases lapsed without a release")
	}
}

// TestLeasesOfAPreviousBoot: a host restarted on the same data directory
// finds its previous boot's leases lapsed at once (no TTL to wait), while a
// fresh boot elsewhere waits for the TTL.
func TestLeasesOfAPreviousBoot(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 1)
	data := t.TempDir()
	first, err := store.Open(testCtx(t), store.Config{URL: c.URL(), DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	if first.PreviousBoot() != "" {
		t.Errorf("a fresh data directory has previous boot %q", first.PreviousBoot())
	}
	lf := mustLeases(t, first, time.Hour)
	if err := lf.Beat(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	gone := first.Boot()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	other := openCluster(t, c.URL())
	again := mustOpenCluster(t, store.Config{URL: c.URL(), DataDir: data})
	if again.PreviousBoot() != gone {
		t.Fatalf("PreviousBoot = %q, want %q", again.PreviousBoot(), gone)
	}
	testutil.Eventually(t, 10*time.Second, "the previous boot's leases to lapse for its successor", func() bool {
		return mustLapsed(t, mustLeases(t, again, time.Hour), gone)
	})
	if mustLapsed(t, mustLeases(t, other, time.Hour), gone) {
		t.Error("another host took a dead boot's leases before the TTL")
	}
}

// TestLeasesEmbedded: with an embedded server every other boot is an
// earlier process of the same host: lapsed.
func TestLeasesEmbedded(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	l := mustLeases(t, st, time.Hour)
	if !mustLapsed(t, l, "boot_earlier") || mustLapsed(t, l, st.Boot()) {
		t.Error("embedded: another boot must be lapsed, this one not")
	}
}
