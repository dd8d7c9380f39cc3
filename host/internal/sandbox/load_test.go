package sandbox_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/sandbox"
)

func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	tests := []struct {
		name    string
		wasm    []byte
		limits  sandbox.Limits
		wantErr error
		wantIn  []string // substrings of the message
	}{
		{"declared memory over the cap", mustFixture(t, "big_decl"), sandbox.Limits{}, sandbox.ErrInvalidModule,
			[]string{"4 GiB", "65536 pages", "64 MiB"}},
		{"missing import", mustFixture(t, "bad_import"), sandbox.Limits{}, sandbox.ErrInvalidModule,
			[]string{"evil.escape"}},
		{"host function not granted", mustFixture(t, "hostcall"), sandbox.Limits{}, sandbox.ErrInvalidModule,
			[]string{"extism:host/user.probe"}},
		{"not wasm", []byte("#!/bin/sh\nrm -rf /"), sandbox.Limits{}, sandbox.ErrInvalidModule, []string{"not a wasm binary"}},
		{"truncated", mustFixture(t, "hostile")[:40], sandbox.Limits{}, sandbox.ErrInvalidModule, []string{"truncated"}},
		{"negative timeout", mustFixture(t, "hostile"), sandbox.Limits{Timeout: -time.Second}, sandbox.ErrInvalidLimits, []string{"timeout"}},
		{"min instances over concurrency", mustFixture(t, "hostile"), sandbox.Limits{Concurrency: 2, MinInstances: 3}, sandbox.ErrInvalidLimits, []string{"min instances"}},
		{"negative idle timeout", mustFixture(t, "hostile"), sandbox.Limits{IdleTimeout: -time.Second}, sandbox.ErrInvalidLimits, []string{"idle timeout"}},
		{"memory under a page", mustFixture(t, "hostile"), sandbox.Limits{MemoryBytes: 1000}, sandbox.ErrInvalidLimits, []string{"page"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "victim", Wasm: tt.wasm, Limits: tt.limits})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Load error = %v, want %v", err, tt.wantErr)
			}
			for _, s := range append(tt.wantIn, `"victim"`) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestLoadDefaultsAndCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m, err := rt.Load(ctx, sandbox.ModuleSpec{Name: "hostile", Wasm: mustFixture(t, "hostile")}) // zero limits: the defaults
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sandbox.DefaultLimits(), m.Limits()); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("compilation cache dir %s is empty (err %v)", dir, err)
	}
	if st := rt.Stats(); st.InstancesLive != 1 {
		t.Errorf("runtime stats %+v: want the load check's instance live", st)
	}
}

func TestInspect(t *testing.T) {
	t.Parallel()
	info, err := sandbox.Inspect(context.Background(), mustFixture(t, "hostile"))
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.ModuleInfo{
		Exports: []string{"echo", "fail", "fail_text", "grow", "grow_huge", "huge_output", "loop", "recurse", "trap"},
		Imports: []string{
			"extism:host/env.alloc", "extism:host/env.error_set", "extism:host/env.input_length",
			"extism:host/env.input_load_u64", "extism:host/env.input_load_u8", "extism:host/env.output_set",
			"extism:host/env.store_u64", "extism:host/env.store_u8",
		},
		MemoryMinPages: 1,
		Size:           len(mustFixture(t, "hostile")),
		Shape: sandbox.ModuleShape{Types: 7, Functions: 17, Exports: 10, DataSegments: 1,
			Locals: 6, MaxLocals: 3, MaxFrameSlots: 3, MaxBodyBytes: 91, CodeBytes: 266},
	}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("Inspect (-want +got):\n%s", diff)
	}
	big, err := sandbox.Inspect(context.Background(), mustFixture(t, "big_decl"))
	if err != nil || big.MemoryMinPages != 65536 || big.MemoryMaxPages != nil {
		t.Errorf("big_decl: %+v, %v; want min 65536 pages, no max", big, err)
	}
}

type probeKey struct{}

// TestHostFunctionSeesCallContext proves the ctx given to Call reaches the
// host functions (Extism's CallWithContext passes it through to wazero).
func TestHostFunctionSeesCallContext(t *testing.T) {
	t.Parallel()
	rt := mustRuntime(t)
	seen := make(chan any, 1)
	probe := extism.NewHostFunctionWithStack("probe", func(ctx context.Context, _ *extism.CurrentPlugin, _ []uint64) {
		_, hasDeadline := ctx.Deadline()
		if !hasDeadline {
			seen <- "no deadline"
			return
		}
		seen <- ctx.Value(probeKey{})
	}, nil, nil)
	m, err := rt.Load(context.Background(), sandbox.ModuleSpec{
		Name: "hostcall", Wasm: mustFixture(t, "hostcall"), HostFunctions: []extism.HostFunction{probe},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), probeKey{}, "request-42")
	if _, err := m.Call(ctx, "probe", nil); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != "request-42" {
		t.Errorf("host function saw %v, want the caller's ctx value", got)
	}
}

func FuzzInspect(f *testing.F) {
	for _, name := range []string{"hostile", "big_decl", "bad_import", "start_loop", "tables", "shape/declares"} {
		f.Add(mustFixture(f, name))
	}
	for _, h := range hostileShapes {
		f.Add(h.wasm)
	}
	lim := sandbox.DefaultShapeLimits()
	f.Fuzz(func(t *testing.T, wasm []byte) {
		info, err := sandbox.Inspect(context.Background(), wasm)
		if err != nil {
			return
		}
		if info.Size != len(wasm) {
			t.Errorf("Size = %d, want %d", info.Size, len(wasm))
		}
		// An accepted module is within every limit, and no count it
		// declares exceeds its own bytes (what wazero allocates from; locals
		// are the one count a few bytes may declare many of, within their
		// limit).
		s := info.Shape
		within := []struct {
			n   int
			max uint32
		}{{s.Types, lim.Types}, {s.Functions, lim.Functions}, {s.Globals, lim.Globals}, {s.Exports, lim.Exports},
			{s.ElementSegments, lim.ElementSegments}, {s.ElementItems, lim.ElementItems}, {s.DataSegments, lim.DataSegments},
			{s.MaxLocals, lim.Locals}, {s.MaxBodyBytes, lim.BodyBytes}, {len(info.Tables), lim.Tables}}
		for i, w := range within {
			if w.n > int(w.max) || w.n > len(wasm) && w.max != lim.Locals {
				t.Errorf("shape count %d = %d, over its limit %d or the module's %d bytes", i, w.n, w.max, len(wasm))
			}
		}
	})
}

func TestLoadAfterRuntimeClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m := mustLoad(t, rt, "hostile", sandbox.Limits{})
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(ctx, "echo", nil); err == nil {
		t.Error("call on a module of a closed runtime succeeded")
	}
	if _, err := rt.Load(ctx, sandbox.ModuleSpec{Name: "late", Wasm: mustFixture(t, "hostile")}); err == nil {
		t.Error("Load on a closed runtime succeeded")
	}
}
