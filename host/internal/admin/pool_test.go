package admin

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// mustPluginFolder writes a plugin folder of a sandbox test module.
func mustPluginFolder(t *testing.T, root, name, fixture, extra, skills string) {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "sandbox", "testdata", fixture+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "name: " + name + "\nversion: 1.0.0\ndescription: d\nwasm: m.wasm\n" + extra + "\nskills:\n" + skills
	for file, body := range map[string][]byte{"m.wasm": wasm, plugin.ManifestFile: []byte(manifest)} {
		if err := os.WriteFile(filepath.Join(dir, file), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The admin documents follow a plugin served on demand: its instance and
// code while it is used, nothing once idle, its warm instances; and a
// plugin whose module fails to compile after it was registered is shown
// failed, without skills.
func TestPoolAndPluginsOnDemand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	mustPluginFolder(t, root, "nap", "hostile", "", "  - {id: nap, function: echo, description: d}\n")
	mustPluginFolder(t, root, "warm", "hostile", "limits: {min_instances: 1}", "  - {id: warm, function: echo, description: d}\n")
	mustPluginFolder(t, root, "doomed", "start_section", "limits: {timeout: 50ms}", "  - {id: doomed, function: run, description: d}\n")
	codeBudget := uint64(config.Defaults().Sandbox.MaxCodeBytes)
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: t.TempDir(), MaxCodeBytes: codeBudget})
	if err != nil {
		t.Fatal(err)
	}
	reg := plugin.NewRegistry(rt, plugin.RegistryOptions{Policy: config.Policy{IdleTimeout: 20 * time.Millisecond, MaxMinInstances: 1},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() {
		_ = reg.Close(ctx)
		_ = rt.Close(ctx)
	})
	if err := reg.LoadDir(ctx, root); err != nil {
		t.Fatal(err)
	}
	// Plugins compile in the background; on a loaded machine a first
	// call could outwait its deadline (plugin_loading) behind them.
	testutil.MustCompiled(t, reg)
	a := New(Deps{Registry: reg, Runtime: rt})
	state := func(name string) PluginView {
		for _, v := range a.Plugins().Plugins {
			if v.Name == name {
				return v
			}
		}
		t.Fatalf("%s not in /admin/plugins", name)
		return PluginView{}
	}
	pool := func(name string) PoolView {
		for _, v := range a.Pool().Plugins {
			if v.Plugin == name {
				return v
			}
		}
		return PoolView{}
	}
	testutil.Eventually(t, 10*time.Second, "doomed failed", func() bool { return state("doomed").State == StateFailed })
	if v := state("doomed"); !strings.Contains(v.Error, `loading plugin "doomed"`) || len(v.Skills) != 0 {
		t.Errorf("doomed = %+v", v)
	}
	if _, err := reg.Execute(ctx, plugin.Call{SkillID: "nap"}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "nap idle, warm warm", func() bool {
		n, w := pool("nap"), pool("warm")
		return n.Instances.Live == 0 && !n.CodeResident && n.Instances.Released > 0 && n.CodeLoads > 0 &&
			w.Instances.Idle == 1 && w.CodeResident && w.MinInstances == 1
	})
	if v := state("nap"); v.State != StateLoaded || v.Limits.IdleTimeout != "20ms" || v.Limits.MinInstances != 0 {
		t.Errorf("nap = %+v (limits %+v)", v, v.Limits)
	}
	doc := a.Pool()
	if doc.Code.Plugins != 1 || doc.Code.ResidentBytes != pool("warm").CodeBytes || doc.Code.BudgetBytes != codeBudget ||
		doc.Compiles.Workers < 1 || doc.Instances.Live != 1 {
		t.Errorf("pool = %+v", doc)
	}
}
