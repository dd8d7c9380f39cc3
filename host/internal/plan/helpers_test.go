package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/store"
)

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
}

// mustPluginDir writes the test plugins into a fresh folder.
func mustPluginDir(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, manifest := range testPlugins {
		dir := filepath.Join(root, name)
		wasm, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// env is a real store, sandbox and registry, plus a running plan Manager.
type env struct {
	data, plugins string
	st            *store.Store
	reg           *plugin.Registry
	m             *Manager
	stop          func() // stops Run and waits for it
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// localCtx carries the trusted local principal, as the stdio transport
// attaches it: sessions without an owner are its own.
func localCtx() context.Context { return auth.With(context.Background(), auth.Local("test")) }

// mustEnv starts everything on data (a fresh folder when "").
func mustEnv(t *testing.T, data string, cfg Config) *env {
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
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e.reg = plugin.NewRegistry(rt, plugin.RegistryOptions{Logger: quiet})
	if err := e.reg.LoadDir(ctx, e.plugins); err != nil {
		t.Fatal(err)
	}
	if e.m, err = Open(ctx, Deps{Store: e.st, Skills: e.reg, Sessions: e.st, Logger: quiet}, cfg); err != nil {
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
	deadline := time.Now().Add(60 * time.Second)
	for {
		rec, err := e.m.Status(localCtx(), session, planID)
		if err != nil {
			t.Fatalf("status %s: %v", planID, err)
		}
		st := StatusOf(rec)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(st, "", "  ")
			t.Fatalf("plan %s: gave up waiting for %s; last status:\n%s", planID, what, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func finished(st StatusResult) bool { return st.Status != StatusExecuting }

// wantFault checks err's kind and reason.
func wantFault(t *testing.T, err error, kind fault.Kind, reason string) *fault.Error {
	t.Helper()
	fe := fault.From(err)
	if err == nil || fe.Kind != kind || fe.Reason != reason {
		t.Fatalf("error %v (kind %v reason %q), want kind %v reason %q", err, fe.Kind, fe.Reason, kind, reason)
	}
	return fe
}

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
