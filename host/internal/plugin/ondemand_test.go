package plugin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// newRuntimeRegistry is newTestRegistry on a runtime configured by rc.
func newRuntimeRegistry(t *testing.T, rc sandbox.RuntimeConfig, pol config.Policy, obs Observer) (*Registry, *sandbox.Runtime) {
	t.Helper()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(rt, RegistryOptions{Policy: pol, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observer: obs})
	t.Cleanup(func() {
		if err := r.Close(ctx); err != nil {
			t.Errorf("registry Close: %v", err)
		}
		if err := rt.Close(ctx); err != nil {
			t.Errorf("runtime Close: %v", err)
		}
	})
	return r, rt
}

// pool returns the named plugin's sandbox stats.
func pool(t *testing.T, r *Registry, name string) sandbox.Stats {
	t.Helper()
	for _, p := range r.Pools() {
		if p.Plugin.Manifest.Name == name {
			return p.Stats
		}
	}
	t.Fatalf("no pool for %s", name)
	return sandbox.Stats{}
}

// After policy.idle_timeout an idle plugin holds no instance and no code;
// its next call succeeds on a fresh instance.
func TestIdlePluginHoldsNoInstance(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "nap"}.write(t, root)
	r, _ := newRuntimeRegistry(t, sandbox.RuntimeConfig{}, config.Policy{IdleTimeout: 20 * time.Millisecond}, nil)
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if got := served(r, "nap-echo"); got != "nap@1.0.0" {
		t.Fatalf("first call: %s", got)
	}
	testutil.Eventually(t, 10*time.Second, "no instance and no code left", func() bool {
		st := pool(t, r, "nap")
		return st.InstancesLive == 0 && st.CodeModules == 0
	})
	out, err := r.Execute(context.Background(), Call{SkillID: "nap-echo", Input: []byte(`{"again":true}`)})
	if err != nil || !out.Fresh || string(out.Output) != `{"again":true}` {
		t.Fatalf("call after the idle timeout = %+v, %v; want it served by a fresh instance", out, err)
	}
}

// limits.min_instances keeps that many instances warm past idle_timeout;
// a plugin beside it without is released meanwhile.
func TestMinInstancesKeepAPluginWarm(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "warm", extra: "limits: {min_instances: 2}"}.write(t, root)
	pluginSpec{name: "cold"}.write(t, root)
	r, _ := newRuntimeRegistry(t, sandbox.RuntimeConfig{}, config.Policy{IdleTimeout: 5 * time.Millisecond, MaxMinInstances: 2}, nil)
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.Snapshot().Plugin("warm"); p.Limits.MinInstances != 2 {
		t.Fatalf("effective min instances %d, want 2", p.Limits.MinInstances)
	}
	testutil.Eventually(t, 10*time.Second, "2 warm instances", func() bool { return pool(t, r, "warm").InstancesIdle == 2 })
	served(r, "cold-echo")
	testutil.Eventually(t, 10*time.Second, "cold released", func() bool { return pool(t, r, "cold").CodeModules == 0 })
	if st := pool(t, r, "warm"); st.InstancesLive != 2 || st.CodeModules != 1 {
		t.Errorf("warm after the sweeps: %+v; want 2 instances and its code", st)
	}
	if out, err := r.Execute(context.Background(), Call{SkillID: "warm-echo"}); err != nil || out.Fresh {
		t.Errorf("call to the warm plugin = %+v, %v; want a warm instance", out, err)
	}
}

// A plugin asking for more warm instances than the operator allows, or
// more than its concurrency, is refused at load, naming the key.
func TestMinInstancesOverTheCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy config.Policy
		extra  string
		want   string
	}{
		{"over the operator's cap", config.Policy{MaxMinInstances: 1}, "limits: {min_instances: 2}",
			"limits.min_instances: 2 exceeds the operator's max 1 (policy.max_min_instances)"},
		{"none allowed by default", config.Policy{}, "limits: {min_instances: 1}",
			"limits.min_instances: 1 exceeds the operator's max 0 (policy.max_min_instances)"},
		{"over the concurrency", config.Policy{MaxMinInstances: 4}, "limits: {min_instances: 3, concurrency: 2}",
			"limits.min_instances: 3 exceeds limits.concurrency 2"},
		{"negative", config.Policy{MaxMinInstances: 4}, "limits: {min_instances: -1}", "limits.min_instances: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			pluginSpec{name: "greedy", extra: tt.extra}.write(t, root)
			r := newTestRegistry(t, tt.policy)
			err := r.LoadDir(context.Background(), root)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadDir = %v, want %q", err, tt.want)
			}
			if len(r.Snapshot().Plugins) != 0 {
				t.Error("the refused plugin is served")
			}
		})
	}
}

// With a code budget for two plugins, a third plugin's call releases the
// code of the least recently used one, and a later call to that one
// loads it again.
func TestCodeBudgetReleasesTheLeastRecentlyUsedPlugin(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		pluginSpec{name: n}.write(t, root)
	}
	// What one plugin's code counts (sandbox's estimate), read from a probe.
	probeRoot := t.TempDir()
	pluginSpec{name: "probe"}.write(t, probeRoot)
	probe, _ := newRuntimeRegistry(t, sandbox.RuntimeConfig{}, config.Policy{}, nil)
	if err := probe.LoadDir(context.Background(), probeRoot); err != nil {
		t.Fatal(err)
	}
	served(probe, "probe-echo")
	one := pool(t, probe, "probe").CodeBytes
	if one == 0 {
		t.Fatal("no code size to budget with")
	}
	// With a cache folder, the background compiles release their code: the
	// calls below decide what is resident.
	r, rt := newRuntimeRegistry(t, sandbox.RuntimeConfig{CacheDir: t.TempDir(), MaxCodeBytes: 2*one + one/2},
		config.Policy{IdleTimeout: time.Hour}, nil)
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the background compiles", func() bool { return len(r.Loading()) == 0 })
	for _, n := range []string{"a", "b", "c"} {
		if got := served(r, n+"-echo"); got != n+"@1.0.0" {
			t.Fatalf("%s: %s", n, got)
		}
	}
	resident := func() string {
		var out []string
		for _, n := range []string{"a", "b", "c"} {
			if pool(t, r, n).CodeModules == 1 {
				out = append(out, n)
			}
		}
		return strings.Join(out, ",")
	}
	if got := resident(); got != "b,c" || rt.Stats().CodeEvictions != 1 {
		t.Fatalf("code resident: %q (evictions %d); want b,c: a was least recently used", got, rt.Stats().CodeEvictions)
	}
	loads := pool(t, r, "a").CodeLoads
	if out, err := r.Execute(context.Background(), Call{SkillID: "a-echo"}); err != nil || !out.Fresh {
		t.Fatalf("a after its release = %+v, %v", out, err)
	}
	if got := resident(); got != "a,c" || pool(t, r, "a").CodeLoads != loads+1 {
		t.Errorf("code resident: %q, a loaded %d times (%d before); want a,c and a loaded again", got, pool(t, r, "a").CodeLoads, loads)
	}
}

// A new plugin serves while its module compiles in the background (one
// compile worker, taken by a plugin whose start function never returns):
// a call with a short deadline gets plugin_loading, a call with a longer
// one waits and is served once the worker is free (the blocking plugin
// removed, which stops its compile).
func TestCallDuringTheBackgroundCompile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	pluginSpec{name: "blocker", module: "start_section", extra: "limits: {timeout: 30s}",
		skills: "  - {id: block, description: d, function: run}\n"}.write(t, root)
	r, rt := newRuntimeRegistry(t, sandbox.RuntimeConfig{CompileWorkers: 1}, config.Policy{}, nil)
	if err := r.LoadDir(ctx, root); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the blocker to hold the compile worker", func() bool {
		return rt.Stats().CompilesRunning == 1
	})
	pluginSpec{name: "late", extra: "limits: {timeout: 30s}"}.write(t, root)
	if err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Snapshot().Plugin("late"); !ok {
		t.Fatal("late is not served while it compiles")
	}
	if l := r.Loading(); len(l) != 2 || !l[1].Registered || l[1].Plugin != "late" {
		t.Errorf("Loading = %+v, want blocker and late compiling", l)
	}
	_, err := r.Execute(ctx, Call{SkillID: "late-echo", Timeout: 20 * time.Millisecond})
	fe := testutil.MustFault(t, err, fault.InvalidState, fault.ReasonPluginLoading)
	if fe.Data["skill_id"] != "late-echo" || !strings.Contains(fe.Msg, `plugin "late" is still compiling`) {
		t.Errorf("loading fault %q (data %v)", fe.Msg, fe.Data)
	}
	served := make(chan error, 1)
	go func() {
		_, err := r.Execute(ctx, Call{SkillID: "late-echo", Input: []byte(`{"patient":1}`)})
		served <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the call to wait for the compile", func() bool {
		return pool(t, r, "late").CallsRunning == 1
	})
	if err := os.RemoveAll(filepath.Join(root, "blocker")); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
}

// A plugin whose module fails its background compile (here: its start
// function outlives its timeout) after it was registered is unloaded: its
// skills leave the snapshot (the card), its folder becomes a problem (not
// retried until it changes), the observer sees it fail.
func TestPluginFailingItsBackgroundCompile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	dir := pluginSpec{name: "doomed", module: "start_section", extra: "limits: {timeout: 50ms}",
		skills: "  - {id: doomed-run, description: d, function: run}\n"}.write(t, root)
	obs := &recorder{}
	r, _ := newRuntimeRegistry(t, sandbox.RuntimeConfig{}, config.Policy{}, obs)
	if err := r.LoadDir(ctx, root); err != nil {
		t.Fatalf("LoadDir refused what only compiling can tell: %v", err)
	}
	testutil.Eventually(t, 10*time.Second, "doomed unloaded", func() bool {
		_, ok := r.Snapshot().Plugin("doomed")
		return !ok && len(r.Problems()) == 1
	})
	p := r.Problems()[0]
	if p.Path != dir || !strings.Contains(p.Message, "plugin.yaml: wasm: plugin.wasm: loading plugin \"doomed\"") {
		t.Errorf("problem = %+v", p)
	}
	_, err := r.Execute(ctx, Call{SkillID: "doomed-run"})
	testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonUnknownSkill)
	if err := r.Reload(ctx); err == nil || !strings.Contains(err.Error(), "loading plugin") {
		t.Errorf("Reload of the unchanged folder = %v, want its problem still reported", err)
	}
	events, _ := obs.take()
	if want := "compiling doomed,failed doomed"; strings.Join(events, ",") != want {
		t.Errorf("events %v, want %s (the unchanged folder not compiled again)", events, want)
	}
}

// A thousand plugin folders (tiny WAT modules) load and each serves.
func TestAThousandPluginFolders(t *testing.T) {
	t.Parallel()
	const n = 1000
	root := t.TempDir()
	wasm := mustRead(t, fixture("hostile"))
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("p%04d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(dir, ManifestFile), pluginSpec{name: fmt.Sprintf("p%04d", i), extra: "limits: {memory: 1MiB}"}.manifest())
	}
	// the host's code budget (sandbox.max_code_bytes)
	rc := sandbox.RuntimeConfig{CacheDir: t.TempDir(), MaxCodeBytes: uint64(config.Defaults().Sandbox.MaxCodeBytes)}
	r, rt := newRuntimeRegistry(t, rc, config.Policy{IdleTimeout: 10 * time.Millisecond}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := r.LoadDir(ctx, root); err != nil {
		t.Fatal(err)
	}
	if got := len(r.Snapshot().Plugins); got != n {
		t.Fatalf("%d plugins on the snapshot, want %d", got, n)
	}
	for i := range n {
		skill := fmt.Sprintf("p%04d-echo", i)
		out, err := r.Execute(ctx, Call{SkillID: skill, Input: []byte(`{"i":1}`)})
		if err != nil || string(out.Output) != `{"i":1}` {
			t.Fatalf("%s: %v", skill, err)
		}
	}
	if st := rt.Stats(); st.Calls != n || st.Failures != 0 || st.CodeBytes > st.CodeBudgetBytes {
		t.Errorf("runtime after %d calls: %+v", n, st)
	}
}

// WaitCompiled returns once every first compile ended, their outcomes
// applied: nothing is loading, a plugin that failed is already a problem.
func TestWaitCompiled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	pluginSpec{name: "fine"}.write(t, root)
	pluginSpec{name: "doomed", module: "start_section", extra: "limits: {timeout: 50ms}",
		skills: "  - {id: doomed-run, description: d, function: run}\n"}.write(t, root)
	r, _ := newRuntimeRegistry(t, sandbox.RuntimeConfig{CacheDir: t.TempDir()}, config.Policy{}, nil)
	if err := r.LoadDir(ctx, root); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitCompiled(ctx); err != nil {
		t.Fatal(err)
	}
	if l := r.Loading(); len(l) != 0 {
		t.Errorf("Loading after WaitCompiled = %+v", l)
	}
	if _, ok := r.Snapshot().Plugin("doomed"); ok || len(r.Problems()) != 1 {
		t.Errorf("doomed still served or not a problem: %+v", r.Problems())
	}
	if got := served(r, "fine-echo"); got != "fine@1.0.0" {
		t.Errorf("fine: %s", got)
	}
}
