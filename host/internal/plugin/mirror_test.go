package plugin

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// mustMirror is a mirror of a fresh object store (on a one-node NATS) into
// a fresh folder, for a registry under the default policy.
func mustMirror(t *testing.T) (*Registry, *store.Objects, *Mirror) {
	t.Helper()
	c := natstest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	reg := newTestRegistry(t, config.DefaultPolicy())
	return reg, obj, NewMirror(reg, obj, filepath.Join(t.TempDir(), "published"))
}

// A plugin published after a host's Sync but before its watch starts (the
// window of a host starting while an operator publishes) is loaded once
// the watch has replayed the store, not only unpacked.
func TestMirrorLoadsAPluginPublishedBeforeItsWatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, obj, m := mustMirror(t)
	pol := config.DefaultPolicy()
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

// A plugin whose unpack fails for a reason that may pass (here the staging
// folder is unusable, as with a full disk; a store that does not answer is
// the same) is tried again while the watch runs, and loads once the cause is
// gone — not only at the next publication or watch restart.
func TestMirrorRetriesAFailedUnpack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, obj, m := mustMirror(t)
	pol := config.DefaultPolicy()
	logs := &testutil.LogBuffer{}
	m.log, m.retryEvery = slog.New(slog.NewTextHandler(logs, nil)), 50*time.Millisecond
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	// The staging folder becomes a file: every unpack fails (even as root).
	if err := os.RemoveAll(m.staging); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.staging, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	src := pluginSpec{name: "flaky"}.write(t, t.TempDir())
	if _, err := Publish(ctx, obj, src, int64(pol.MaxModuleBytes)); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	testutil.Eventually(t, time.Minute, "the failed unpack logged", func() bool {
		return strings.Contains(logs.String(), "not unpacked")
	})
	if _, _, ok := reg.Snapshot().Skill("flaky-echo"); ok {
		t.Fatal("flaky-echo loaded although its unpack failed")
	}
	if err := os.Remove(m.staging); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(m.staging, 0o700); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "flaky-echo loaded after the cause is gone", func() bool {
		_, _, ok := reg.Snapshot().Skill("flaky-echo")
		return ok
	})
	if n := strings.Count(logs.String(), "not unpacked"); n != 1 {
		t.Errorf("the failure was logged %d times, want once (retries are quiet)", n)
	}
}
