package plugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// watching starts Watch on root and stops it when the test ends.
func watching(t *testing.T, r *Registry, root string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, root) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
}

func served(r *Registry, skill string) string {
	out, err := r.Execute(context.Background(), Call{SkillID: skill, Input: []byte(`{}`)})
	if err != nil {
		return "error: " + err.Error()
	}
	return out.Plugin + "@" + out.Version
}

func TestWatchLoadsNewFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := newTestRegistry(t, config.Policy{})
	watching(t, r, root)

	// Written in place, file by file: many events, half-written files.
	pluginSpec{name: "inplace"}.write(t, root)
	testutil.Eventually(t, 10*time.Second, "inplace loads", func() bool { return served(r, "inplace-echo") == "inplace@1.0.0" })

	// Staged then renamed in: one event.
	staged := pluginSpec{name: "renamed"}.stage(t, root)
	if err := os.Rename(staged, filepath.Join(root, "renamed")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "renamed loads", func() bool { return served(r, "renamed-echo") == "renamed@1.0.0" })
	if n := len(r.Problems()); n != 0 {
		t.Errorf("problems left after complete copies: %+v", r.Problems())
	}
}

func TestReplaceUnderLoadFailsNoCall(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "live"}.write(t, root)
	r := newTestRegistry(t, config.Policy{})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	old := r.cur.byDir[filepath.Join(root, "live")]
	watching(t, r, root)

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		calls    atomic.Int64
		mu       sync.Mutex
		failures []error
		sawNew   atomic.Bool
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				out, err := r.Execute(context.Background(), Call{SkillID: "live-echo", Input: []byte(`{"n":1}`)})
				calls.Add(1)
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					continue
				}
				if out.Version == "2.0.0" {
					sawNew.Store(true)
				}
			}
		}()
	}
	testutil.Eventually(t, 10*time.Second, "calls flowing", func() bool { return calls.Load() > 20 })
	pluginSpec{name: "live", version: "2.0.0"}.write(t, root) // rewritten in place under load
	testutil.Eventually(t, 10*time.Second, "v2 serving", sawNew.Load)
	before := calls.Load()
	testutil.Eventually(t, 10*time.Second, "more calls on v2", func() bool { return calls.Load() > before+20 })
	stop.Store(true)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d calls failed during the replacement; first: %v", len(failures), calls.Load(), failures[0])
	}
	testutil.Eventually(t, 10*time.Second, "old module closed", old.closed.Load)
}

func TestBrokenReplacementKeepsTheOldRevision(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "keep"}.write(t, root)
	pluginSpec{name: "owner", skills: "  - {id: owned, description: d, function: echo}\n"}.write(t, root)
	r := newTestRegistry(t, config.Policy{})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	watching(t, r, root)
	manifest := filepath.Join(root, "keep", ManifestFile)

	steps := []struct {
		name    string
		spec    pluginSpec
		problem string // expected problem text after the file name
	}{
		{"policy refusal", pluginSpec{name: "keep", version: "2.0.0", extra: "limits: {memory: 1GiB}"},
			"limits.memory: 1GiB exceeds the operator's max 256MiB"},
		{"skill collision", pluginSpec{name: "keep", version: "3.0.0", skills: "  - {id: keep-echo, description: d, function: echo}\n  - {id: owned, description: d, function: echo}\n"},
			`skills[1].id: "owned" is already provided by plugin "owner"`},
		{"missing export", pluginSpec{name: "keep", version: "4.0.0", skills: "  - {id: keep-echo, description: d, function: gone}\n"},
			`skills[0].function: "gone" is not exported by plugin.wasm`},
	}
	for _, st := range steps {
		st.spec.write(t, root)
		testutil.Eventually(t, 10*time.Second, st.name+" reported", func() bool {
			ps := r.Problems()
			return len(ps) == 1 && strings.HasPrefix(ps[0].Message, manifest+": "+st.problem)
		})
		if got := served(r, "keep-echo"); got != "keep@1.0.0" {
			t.Fatalf("after %s, keep-echo served by %s; want the old keep@1.0.0", st.name, got)
		}
		if got := served(r, "owned"); got != "owner@1.0.0" {
			t.Fatalf("after %s, owned served by %s; want owner@1.0.0", st.name, got)
		}
	}
	pluginSpec{name: "keep", version: "5.0.0"}.write(t, root)
	testutil.Eventually(t, 10*time.Second, "fixed revision serving", func() bool { return served(r, "keep-echo") == "keep@5.0.0" })
	if ps := r.Problems(); len(ps) != 0 {
		t.Errorf("problem not cleared by a good revision: %+v", ps)
	}
}

func TestRemovalUnloadsAfterInFlightCalls(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "gone"}.write(t, root)
	pluginSpec{name: "stays"}.write(t, root)
	r := newTestRegistry(t, config.Policy{})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	served(r, "gone-echo") // its code and an instance in the pool: what a call in flight runs on
	rev := r.Snapshot().Revision
	var notified atomic.Uint64
	r.OnChange(func(s *Snapshot) { notified.Store(s.Revision) })

	// A call in flight pins the revision across its removal.
	e, _, err := r.acquire(Call{SkillID: "gone-echo"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), Call{SkillID: "gone-echo"}); !errors.Is(err, fault.ErrInvalidParams) {
		t.Errorf("removed skill still callable: %v", err)
	}
	if _, ok := r.Snapshot().Plugin("gone"); ok || r.Snapshot().Revision != rev+1 || notified.Load() != rev+1 {
		t.Errorf("snapshot after removal: %+v (notified %d)", r.Snapshot(), notified.Load())
	}
	if e.closed.Load() {
		t.Fatal("module closed under a call in flight")
	}
	if res, err := e.module.Call(context.Background(), "echo", []byte(`"still here"`)); err != nil || string(res.Output) != `"still here"` {
		t.Fatalf("in-flight call on the removed revision failed: %v", err)
	}
	e.release(context.Background())
	if !e.closed.Load() {
		t.Error("module not closed when its last call returned")
	}

	// With Watch: a removed folder disappears on its own.
	watching(t, r, root)
	if err := os.RemoveAll(filepath.Join(root, "stays")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "stays unloaded", func() bool { return len(r.Snapshot().Plugins) == 0 })
}

func TestReloadNeedsAFolder(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, config.Policy{})
	if err := r.Reload(context.Background()); err == nil {
		t.Error("Reload without a folder succeeded")
	}
}

func TestCloseRefusesCalls(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "c"}.write(t, root)
	r := newTestRegistry(t, config.Policy{})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	e := r.cur.byDir[filepath.Join(root, "c")]
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !e.closed.Load() {
		t.Error("Close left a module open")
	}
	_, err := r.Execute(context.Background(), Call{SkillID: "c-echo"})
	testutil.MustFault(t, err, fault.Internal, fault.ReasonInternal)
	if err := r.LoadDir(context.Background(), root); err == nil {
		t.Error("LoadDir after Close succeeded")
	}
}
