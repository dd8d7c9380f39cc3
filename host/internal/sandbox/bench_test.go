package sandbox_test

import (
	"context"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/skillhost/skillhost/host/internal/sandbox"
)

var benchInput = []byte(`{"text":"hello, benchmark"}`)

// BenchmarkHostCall is Module.Call of echo on a pooled instance.
func BenchmarkHostCall(b *testing.B) {
	rt := mustRuntime(b)
	m := mustLoad(b, rt, "hostile", sandbox.Limits{Concurrency: 1})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Call(ctx, "echo", benchInput); err != nil {
			b.Fatal(err)
		}
	}
}

// mustRawCompiled compiles the echo fixture with plain Extism.
func mustRawCompiled(b *testing.B) *extism.CompiledPlugin {
	b.Helper()
	ctx := context.Background()
	c, err := extism.NewCompiledPlugin(ctx, extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: mustFixture(b, "hostile")}},
	}, extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(ctx) })
	return c
}

// BenchmarkRawExtism is a reused raw Extism instance calling echo: the
// floor the sandbox's overhead is measured against.
func BenchmarkRawExtism(b *testing.B) {
	ctx := context.Background()
	p, err := mustRawCompiled(b).Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.CallWithContext(ctx, "echo", benchInput); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFreshInstance instantiates, calls and closes per call: what a
// call costs without a pool.
func BenchmarkFreshInstance(b *testing.B) {
	ctx := context.Background()
	c := mustRawCompiled(b)
	b.ReportAllocs()
	for b.Loop() {
		p, err := c.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := p.CallWithContext(ctx, "echo", benchInput); err != nil {
			b.Fatal(err)
		}
		p.Close(ctx)
	}
}
