package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// TestBootLiveness: every Open is a boot of its own; a boot answers while
// its store is open, on any server of the cluster, and is dead once it is
// closed, while the others live on.
func TestBootLiveness(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := natstest.Start(t, 3)
	a, b := openCluster(t, c.NodeURL(0)), openCluster(t, c.NodeURL(2))
	if a.Boot() == b.Boot() || !strings.HasPrefix(a.Boot(), "boot_") {
		t.Fatalf("boots %q and %q: want two distinct boot_ ids", a.Boot(), b.Boot())
	}
	ctx := testCtx(t)
	for _, id := range []string{a.Boot(), b.Boot()} {
		if alive, err := a.Alive(ctx, id); !alive || err != nil {
			t.Errorf("Alive(%s) = %v, %v; want true", id, alive, err)
		}
	}
	if alive, err := a.Alive(ctx, "boot_never"); alive || err != nil {
		t.Errorf("Alive(boot_never) = %v, %v; want false", alive, err)
	}
	runs := store.Runs{Open: []store.Run{{Boot: a.Boot()}, {Boot: b.Boot()}, {Boot: "boot_never"}}}
	if diff := cmp.Diff(map[string]bool{"boot_never": true}, a.Dead(ctx, runs)); diff != "" {
		t.Errorf("Dead while both live (-want +got):\n%s", diff)
	}
	gone := b.Boot()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the closed boot to be dead", func() bool {
		alive, err := a.Alive(ctx, gone)
		return err == nil && !alive
	})
	if diff := cmp.Diff(map[string]bool{"boot_never": true, gone: true}, a.Dead(ctx, runs)); diff != "" {
		t.Errorf("Dead after a close (-want +got):\n%s", diff)
	}
}

// TestEmbeddedBootDiesWithItsStore: a store reopened on the same data is a
// new boot, and the previous one is dead.
func TestEmbeddedBootDiesWithItsStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := store.Open(testCtx(t), store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	old := first.Boot()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	st := mustOpen(t, store.Config{DataDir: dir})
	if st.Boot() == old {
		t.Fatalf("reopened store kept boot %s", old)
	}
	if alive, err := st.Alive(testCtx(t), old); alive || err != nil {
		t.Errorf("Alive(previous boot) = %v, %v; want false", alive, err)
	}
	if alive, err := st.Alive(testCtx(t), st.Boot()); !alive || err != nil {
		t.Errorf("Alive(own boot) = %v, %v; want true", alive, err)
	}
}

func TestRuns(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	run := func(boot string, s int) store.Run { return store.Run{Boot: boot, Host: "h-" + boot, At: at(s)} }
	tests := []struct {
		name    string
		do      func(r *store.Runs) bool
		want    store.Runs
		crashes int
	}{
		{"start", func(r *store.Runs) bool { r.Start(run("b1", 0)); return false },
			store.Runs{Open: []store.Run{run("b1", 0)}}, 0},
		{"a second start of one boot replaces its run", func(r *store.Runs) bool { r.Start(run("b1", 0)); r.Start(run("b1", 5)); return false },
			store.Runs{Open: []store.Run{run("b1", 5)}}, 0},
		{"end", func(r *store.Runs) bool { r.Start(run("b1", 0)); r.Start(run("b2", 1)); r.End("b1"); return false },
			store.Runs{Open: []store.Run{run("b2", 1)}}, 0},
		{"ended runs never crash", func(r *store.Runs) bool {
			r.Start(run("b1", 0))
			r.End("b1")
			return r.Settle(map[string]bool{"b1": true})
		}, store.Runs{}, 0},
		{"settle moves the dead boots' runs", func(r *store.Runs) bool {
			r.Start(run("b1", 0))
			r.Start(run("b2", 1))
			r.Start(run("b3", 2))
			return r.Settle(map[string]bool{"b1": true, "b3": true})
		}, store.Runs{Open: []store.Run{run("b2", 1)}, Crashed: []store.Run{run("b1", 0), run("b3", 2)}}, 2},
		{"settle without the dead", func(r *store.Runs) bool { r.Start(run("b1", 0)); return r.Settle(map[string]bool{"b9": true}) },
			store.Runs{Open: []store.Run{run("b1", 0)}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r store.Runs
			moved := tt.do(&r)
			if diff := cmp.Diff(tt.want, r); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			if moved != (tt.crashes > 0) || r.Crashes() != tt.crashes || len(r.Boots()) != tt.crashes {
				t.Errorf("moved %v, crashes %d, boots %v; want %d crashes", moved, r.Crashes(), r.Boots(), tt.crashes)
			}
			for i, h := range r.Hosts() {
				if h != "h-"+r.Boots()[i] {
					t.Errorf("crash %d: host %q, boot %q", i, h, r.Boots()[i])
				}
			}
		})
	}
}
