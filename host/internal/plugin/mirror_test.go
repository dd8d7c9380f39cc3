package plugin

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// A plugin published after a host's Sync but before its watch starts (the
// window of a host starting while an operator publishes) is loaded once
// the watch has replayed the store, not only unpacked.
func TestMirrorLoadsAPluginPublishedBeforeItsWatch(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, store.Config{URL: c.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	obj, err := st.OpenObjects(ctx, store.ObjectsConfig{Name: "published"})
	if err != nil {
		t.Fatal(err)
	}
	pol := config.DefaultPolicy()
	reg := newTestRegistry(t, pol)
	m := NewMirror(reg, obj, filepath.Join(t.TempDir(), "published"))
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	src := pluginSpec{name: "late"}.write(t, t.TempDir())
	if _, err := Publish(ctx, obj, src, int64(pol.MaxModuleBytes)); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	testutil.Eventually(t, time.Minute, "the late plugin's skill loaded", func() bool {
		_, _, ok := reg.Snapshot().Skill("late-echo")
		return ok
	})
}
