package plugin

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// recorder is an Observer that records what it sees; hold, when set,
// blocks the "compiling" event of that plugin until released.
type recorder struct {
	mu     sync.Mutex
	events []string // "kind plugin"
	calls  []string // "plugin/skill reason" ("ok" on success)

	hold      string
	compiling chan struct{} // closed when hold's compiling event arrives
	release   chan struct{}
}

func (o *recorder) SkillCalled(_ context.Context, r CallReport) {
	outcome := "ok"
	if r.Err != nil {
		outcome = r.Err.WireReason()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, r.Plugin.Manifest.Name+"/"+r.Skill.ID+" "+outcome)
}

func (o *recorder) PluginEvent(e LoadEvent) {
	o.mu.Lock()
	o.events = append(o.events, string(e.Kind)+" "+e.Plugin)
	o.mu.Unlock()
	if e.Kind == EventCompiling && e.Plugin == o.hold {
		o.hold = "" // once
		close(o.compiling)
		<-o.release
	}
}

func (o *recorder) take() (events, calls []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	events, calls = o.events, o.calls
	o.events, o.calls = nil, nil
	return events, calls
}

func newObservedRegistry(t *testing.T, obs Observer, logs *testutil.LogBuffer) *Registry {
	t.Helper()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(rt, RegistryOptions{Policy: config.Policy{}, Logger: slog.New(slog.NewTextHandler(logs, nil)), Observer: obs})
	t.Cleanup(func() {
		if err := r.Close(ctx); err != nil {
			t.Errorf("registry Close: %v", err)
		}
		if err := rt.Close(ctx); err != nil {
			t.Errorf("runtime Close: %v", err)
		}
	})
	return r
}

// A plugin's life as an observer sees it: compiling (its skills answer
// plugin_loading meanwhile, not unknown_skill), loaded, calls with their
// outcome, a broken revision refused while the old one serves, the
// problem cleared by a good revision, and the unload. Each step is logged.
func TestObserverSeesThePluginLife(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	obs := &recorder{hold: "life", compiling: make(chan struct{}), release: make(chan struct{})}
	logs := &testutil.LogBuffer{}
	r := newObservedRegistry(t, obs, logs)
	skills := "  - {id: life-echo, description: echoes, function: echo}\n  - {id: life-trap, description: traps, function: trap}\n"
	dir := pluginSpec{name: "life", skills: skills}.write(t, root)

	loaded := make(chan error, 1)
	go func() { loaded <- r.LoadDir(ctx, root) }()
	<-obs.compiling
	_, err := r.Execute(ctx, Call{SkillID: "life-echo"})
	fe := testutil.MustFault(t, err, fault.InvalidState, fault.ReasonPluginLoading)
	if !strings.Contains(fe.Msg, `plugin "life" is compiling`) {
		t.Errorf("loading message = %q", fe.Msg)
	}
	_, err = r.Execute(ctx, Call{Agent: "life", SkillID: "life-echo"})
	testutil.MustFault(t, err, fault.InvalidState, fault.ReasonPluginLoading)
	_, err = r.Execute(ctx, Call{SkillID: "nothing-like-it"})
	testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonUnknownSkill)
	loading := r.Loading()
	if len(loading) != 1 || loading[0].Plugin != "life" || loading[0].Replacing || !cmp.Equal(loading[0].Skills, []string{"life-echo", "life-trap"}) {
		t.Errorf("Loading = %+v", loading)
	}
	close(obs.release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	// Registered: on the card while its module compiles in the background.
	if _, ok := r.Snapshot().Plugin("life"); !ok {
		t.Fatal("life not on the snapshot once LoadDir returned")
	}
	testutil.Eventually(t, 10*time.Second, "the background compile to end", func() bool { return len(r.Loading()) == 0 })
	testutil.Eventually(t, 10*time.Second, "the log to say every plugin compiled", func() bool {
		return strings.Contains(logs.String(), "plugin: every plugin compiled")
	})
	if _, err := r.Execute(ctx, Call{SkillID: "life-echo"}); err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(ctx, Call{SkillID: "life-trap"})
	testutil.MustFault(t, err, fault.SkillFailed, fault.ReasonTrap)
	if p, ok := r.Snapshot().Plugin("life"); !ok || p.Revision != r.Snapshot().Revision {
		t.Errorf("plugin revision = %+v, snapshot revision %d", p, r.Snapshot().Revision)
	}

	// A revision whose skill names a missing export is refused after it
	// started compiling; the old one keeps serving.
	mustWrite(t, filepath.Join(dir, ManifestFile), pluginSpec{name: "life", version: "2.0.0",
		skills: "  - {id: life-echo, description: echoes, function: no_such_export}\n"}.manifest())
	if err := r.Reload(ctx); err == nil {
		t.Fatal("Reload of a broken revision succeeded")
	}
	if got := served(r, "life-echo"); got != "life@1.0.0" {
		t.Errorf("served %q during the problem, want life@1.0.0", got)
	}
	pluginSpec{name: "life", version: "3.0.0", skills: skills}.write(t, root)
	if err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}

	events, calls := obs.take()
	wantEvents := []string{"compiling life", "loaded life", "compiling life", "failed life", "compiling life", "replaced life",
		"cleared life", "unloaded life"}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// Calls refused before resolution (loading, unknown) are not reported.
	wantCalls := []string{"life/life-echo ok", "life/life-trap trap", "life/life-echo ok"}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	for _, msg := range []string{"plugin: compiling", "plugin: loaded", "plugin: new revision refused", "plugin: replaced",
		"plugin: problem cleared", "plugin: unloaded"} {
		if !strings.Contains(logs.String(), msg) {
			t.Errorf("no %q log line in:\n%s", msg, logs.String())
		}
	}
}

// loadingFault names the plugin and how long it has compiled.
func TestLoadingFault(t *testing.T) {
	t.Parallel()
	fe := loadingFault("s", Loading{Plugin: "p", Since: time.Now().Add(-1500 * time.Millisecond)})
	if fe.Kind != fault.InvalidState || fe.Reason != fault.ReasonPluginLoading || fe.Data["plugin"] != "p" || fe.Data["skill_id"] != "s" ||
		!strings.Contains(fe.Msg, "compiling (for 1.5") {
		t.Errorf("loadingFault = %+v", fe)
	}
}
