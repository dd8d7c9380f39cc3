package hostfn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// The test plugin (testdata/guest, built with the SDK) is compiled once per
// test binary run into a temporary directory.
var (
	guestOnce sync.Once
	guestWasm []byte
	guestErr  error
	guestDir  string
	wazCache  wazero.CompilationCache
)

func TestMain(m *testing.M) {
	code := m.Run()
	if guestDir != "" {
		os.RemoveAll(guestDir)
	}
	os.Exit(code)
}

// mustGuest returns the test plugin's bytes, building it on first use.
func mustGuest(t *testing.T) []byte {
	t.Helper()
	guestOnce.Do(func() {
		guestDir, guestErr = os.MkdirTemp("", "hostfn-guest-")
		if guestErr != nil {
			return
		}
		out := filepath.Join(guestDir, "guest.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = filepath.Join("testdata", "guest")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=readonly")
		if b, err := cmd.CombinedOutput(); err != nil {
			guestErr = fmt.Errorf("building the test plugin: %w\n%s", err, b)
			return
		}
		guestWasm, guestErr = os.ReadFile(out)
		if guestErr != nil {
			return
		}
		guestErr = warmCache(t.Context(), guestWasm)
	})
	if guestErr != nil {
		t.Fatal(guestErr)
	}
	return guestWasm
}

// warmCache compiles the guest once into the shared in-memory compilation
// cache, so the parallel tests that follow load it instead of each compiling
// it (a 3 MB Go guest takes seconds to compile, many more under -race).
func warmCache(ctx context.Context, wasm []byte) error {
	wazCache = wazero.NewCompilationCache()
	rt := wazero.NewRuntimeWithConfig(ctx, runtimeConfig())
	defer rt.Close(ctx)
	_, err := rt.CompileModule(ctx, wasm)
	return err
}

// runtimeConfig is the wazero configuration of every test plugin.
func runtimeConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(wazCache)
}

// guest is one compiled test plugin with a given set of host functions.
type guest struct {
	compiled *extism.CompiledPlugin
}

func mustCompile(t *testing.T, deps hostfn.Deps, grant hostfn.Grant) *guest {
	t.Helper()
	wasm := mustGuest(t)
	ctx := t.Context()
	compiled, err := extism.NewCompiledPlugin(ctx, extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
		Config: map[string]string{"greeting": "hi"},
		Memory: &extism.ManifestMemory{MaxVarBytes: 1 << 20, MaxHttpResponseBytes: 1 << 20},
	}, extism.PluginConfig{
		EnableWasi:    true,
		RuntimeConfig: runtimeConfig(),
	}, hostfn.New(deps, grant))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	t.Cleanup(func() { compiled.Close(context.WithoutCancel(ctx)) })
	return &guest{compiled: compiled}
}

// instance is one plugin instance (not safe for concurrent use).
type instance struct {
	t *testing.T
	p *extism.Plugin
}

func (g *guest) mustInstance(t *testing.T) *instance {
	t.Helper()
	p, err := g.compiled.Instance(t.Context(), extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig()})
	if err != nil {
		t.Fatalf("instance: %v", err)
	}
	t.Cleanup(func() { p.Close(context.WithoutCancel(t.Context())) })
	return &instance{t: t, p: p}
}

// guestError is the structured error the SDK sets.
type guestError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// call runs fn with input under call; it returns the output, or the decoded
// plugin error (rc 1). A trap fails the test.
// invocations are the invocations test calls run as (as, in.call).
var invocations sync.Map // *hostfn.Call → auth.Invocation

// as makes in.call run c as inv (its session and request id).
func as(inv auth.Invocation, c *hostfn.Call) *hostfn.Call {
	invocations.Store(c, inv)
	return c
}

func (in *instance) call(call *hostfn.Call, fn string, input any) ([]byte, *guestError) {
	in.t.Helper()
	raw, ok := input.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(input); err != nil {
			in.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(in.t.Context(), 20*time.Second)
	defer cancel()
	if inv, ok := invocations.Load(call); ok {
		ctx = auth.Invoke(ctx, inv.(auth.Invocation))
	}
	rc, out, err := in.p.CallWithContext(hostfn.WithCall(ctx, call), fn, raw)
	if rc == 0 && err == nil {
		return out, nil
	}
	var ge guestError
	if jerr := json.Unmarshal([]byte(in.p.GetError()), &ge); jerr != nil || ge.Code == "" {
		in.t.Fatalf("%s: rc %d, err %v, plugin error %q: not a structured error", fn, rc, err, in.p.GetError())
	}
	return nil, &ge
}

// progressFunc is a test's progress sink.
type progressFunc func(hostfn.Progress)

func (f progressFunc) Progress(p hostfn.Progress) { f(p) }
