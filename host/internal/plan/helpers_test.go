package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// plans is the default plans.* section with edit applied.
func plans(edit func(*Config)) Config {
	c := config.Defaults().Plans
	edit(&c)
	return c
}

// withSecret is the default plans.* section with plans.webhook_secret set.
func withSecret(secret string) Config {
	return plans(func(c *Config) { c.WebhookSecret = secret })
}

// testPlugins are the plugin folders every test host serves: the hostile
// fixture (echo, loop, trap, fail) and burn (a slow, successful step).
var testPlugins = map[string]string{
	"hostile": `name: hostile
version: 1.0.0
description: misbehaving fixture
wasm: plugin.wasm
limits: {timeout: 10s, output: 16MiB}
skills:
  - {id: echo, description: echoes its input}
  - {id: huge_output, description: 8 MiB of zeros}
  - {id: loop, description: never returns}
  - {id: trap, description: traps}
  - {id: fail, description: reports an error}
`,
	"burn": `name: burn
version: 1.0.0
description: slow fixture
wasm: plugin.wasm
limits: {timeout: 30s}
skills:
  - {id: burn, description: spins N iterations then echoes}
`,
	"solo": `name: solo
version: 1.0.0
description: slow fixture with one instance
wasm: plugin.wasm
limits: {timeout: 30s, concurrency: 1}
skills:
  - {id: solo_burn, function: burn, description: spins N iterations then echoes}
`,
}

// mustPluginDir writes the test plugins into a fresh folder: the WAT
// fixtures and the stepper Go guest (testdata/stepper).
func mustPluginDir(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, manifest := range testPlugins {
		module := name
		if name == "solo" {
			module = "burn"
		}
		wasm, err := os.ReadFile(filepath.Join("testdata", module+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		mustWritePlugin(t, filepath.Join(root, name), map[string][]byte{"plugin.wasm": wasm, "plugin.yaml": []byte(manifest)})
	}
	manifest, err := os.ReadFile(filepath.Join("testdata", "stepper", "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mustWritePlugin(t, filepath.Join(root, "stepper"), map[string][]byte{"stepper.wasm": mustStepper(t), "plugin.yaml": manifest})
	return root
}

func mustWritePlugin(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// compileCache is wazero's compilation cache shared by every test host of
// this binary, so the stepper Go guest compiles once, not once per host.
var compileCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plan-wazero-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	compileCache = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// stepperGuest is testdata/stepper built with the SDK, once per test binary.
var stepperGuest struct {
	once sync.Once
	wasm []byte
	err  error
}

// warmCache compiles the module in file into compileCache with the host's
// sandbox, in a separate process built without -race (compiling a Go guest
// under the race detector takes tens of seconds), so the test hosts that
// start in parallel load it from the cache. wazero names its cache after its
// version, read from the binary's build information; a -race test binary
// has none and says "dev", so the helper is told the version this binary
// reports (a mismatch only costs the speed-up).
func warmCache(file string) error {
	version := "dev"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/tetratelabs/wazero" && dep.Version != "" && dep.Version != "(devel)" {
				version = dep.Version
			}
		}
	}
	cmd := exec.Command("go", "run", "-ldflags=-X=github.com/tetratelabs/wazero/internal/version.version="+version,
		"./testdata/precompile", compileCache, file)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("precompiling %s: %w\n%s", file, err, b)
	}
	return nil
}

// mustStepper returns the stepper plugin's module, building it on first use.
func mustStepper(t *testing.T) []byte {
	t.Helper()
	stepperGuest.once.Do(func() {
		dir, err := os.MkdirTemp("", "plan-stepper-")
		if err != nil {
			stepperGuest.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "stepper.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = filepath.Join("testdata", "stepper")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=readonly")
		if b, err := cmd.CombinedOutput(); err != nil {
			stepperGuest.err = fmt.Errorf("building the stepper test plugin: %w\n%s", err, b)
			return
		}
		if stepperGuest.err = warmCache(out); stepperGuest.err == nil {
			stepperGuest.wasm, stepperGuest.err = os.ReadFile(out)
		}
	})
	if stepperGuest.err != nil {
		t.Fatal(stepperGuest.err)
	}
	return stepperGuest.wasm
}

// env is a real store, sandbox and registry (with the real host
// functions), an event bus, plus a running plan Manager.
type env struct {
	data, plugins string
	st            *store.Store
	reg           *plugin.Registry
	bus           *events.Bus
	m             *Manager
	stop          func() // stops Run and waits for it
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// localCtx carries the trusted local principal, as the stdio transport
// attaches it: sessions without an owner are its own.
func localCtx() context.Context { return auth.With(context.Background(), auth.Local("test")) }

// testSecret signs the test hosts' webhooks; loopback lets them reach
// receivers on 127.0.0.1 (as net.allow_private would).
const testSecret = "test-webhook-secret-0123456789"

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// mustEnv starts everything on data (a fresh folder when ""); opts adjust
// the Manager's dependencies.
func mustEnv(t *testing.T, data string, cfg Config, opts ...func(*Deps)) *env {
	t.Helper()
	ctx := localCtx()
	e := &env{data: data, plugins: mustPluginDir(t)}
	if e.data == "" {
		e.data = t.TempDir()
	}
	var err error
	if e.st, err = store.Open(ctx, store.Config{DataDir: e.data}); err != nil {
		t.Fatal(err)
	}
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: compileCache})
	if err != nil {
		t.Fatal(err)
	}
	e.reg = plugin.NewRegistry(rt, plugin.RegistryOptions{Logger: quiet,
		HostFunctions: func(m *plugin.Manifest, _ *plugin.Registry) []extism.HostFunction {
			return hostfn.New(hostfn.Deps{Context: e.st, Logger: quiet}, hostfn.Grant{Plugin: m.Name})
		}})
	if err := e.reg.LoadDir(ctx, e.plugins); err != nil {
		t.Fatal(err)
	}
	// Plugins compile in the background; on a loaded machine a first
	// call could outwait its deadline (plugin_loading) behind them.
	testutil.MustCompiled(t, e.reg)
	if e.bus, err = events.Open(ctx, e.st, events.Config{}); err != nil {
		t.Fatal(err)
	}
	deps := Deps{Store: e.st, Skills: e.reg, Sessions: e.st, Events: e.bus, Logger: quiet,
		Webhooks: NewWebhooks(WebhookConfig{Plans: withSecret(testSecret), Net: hostfn.NetPolicy{AllowPrivate: loopback, Timeout: 5 * time.Second}, Backoff: 50 * time.Millisecond})}
	for _, o := range opts {
		o(&deps)
	}
	if e.m, err = Open(ctx, deps, cfg); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = e.m.Run(runCtx) }()
	stopped := false
	e.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(func() {
		e.stop()
		_ = e.reg.Close(ctx)
		_ = rt.Close(ctx)
		_ = e.st.Close()
	})
	return e
}

func mustSession(t *testing.T, e *env) string {
	t.Helper()
	s, err := e.st.CreateSession(localCtx(), store.Session{})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// step renders one step of a definition.
func step(id, action, params string) map[string]any {
	s := map[string]any{"id": id, "type": "skill", "action": action}
	if params != "" {
		s["params"] = json.RawMessage(params)
	}
	return s
}

func definition(steps ...map[string]any) json.RawMessage {
	b, err := json.Marshal(map[string]any{"name": "test plan", "steps": steps})
	if err != nil {
		panic(err)
	}
	return b
}

func mustCreate(t *testing.T, e *env, session, planID string, def json.RawMessage) {
	t.Helper()
	if _, err := e.m.Create(localCtx(), CreateRequest{SessionID: session, PlanID: planID, Definition: def}); err != nil {
		t.Fatalf("create %s: %v", planID, err)
	}
}

func mustExecute(t *testing.T, e *env, session, planID string, opts ExecuteOptions) *Record {
	t.Helper()
	rec, err := e.m.Execute(localCtx(), session, planID, opts)
	if err != nil {
		t.Fatalf("execute %s: %v", planID, err)
	}
	return rec
}

// waitFor polls the plan's status until cond holds (generous deadline).
func waitFor(t *testing.T, e *env, session, planID string, what string, cond func(StatusResult) bool) StatusResult {
	t.Helper()
	var st StatusResult
	testutil.Eventually(t, 60*time.Second, fmt.Sprintf("plan %s: %s", planID, what), func() bool {
		rec, err := e.m.Status(localCtx(), session, planID)
		if err != nil {
			t.Fatalf("status %s: %v", planID, err)
		}
		st = StatusOf(rec)
		return cond(st)
	})
	return st
}

func finished(st StatusResult) bool { return st.Status != StatusExecuting }

// burnIterations calibrates the burn fixture: iterations that take about d.
func burnIterations(t *testing.T, e *env, d time.Duration) int64 {
	t.Helper()
	const probe = 5_000_000
	start := time.Now()
	if _, err := e.reg.Execute(localCtx(), plugin.Call{SkillID: "burn", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, probe))}); err != nil {
		t.Fatal(err)
	}
	per := float64(time.Since(start)) / probe
	return int64(float64(d) / per)
}
