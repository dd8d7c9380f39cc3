package sandbox_test

import (
	"context"
	"fmt"
	"os"
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

// TestReportBenchRatio prints the sandbox overhead over raw Extism and the
// pooled-versus-fresh throughput, and fails when the overhead is above 1.2×
// or a pooled call is not at least 10× faster than a fresh instance. Both are
// ratios measured in the same run. Run by `make bench` (SKILLHOST_BENCH=1);
// skipped otherwise.
func TestReportBenchRatio(t *testing.T) {
	if os.Getenv("SKILLHOST_BENCH") == "" {
		t.Skip("set SKILLHOST_BENCH=1 to run")
	}
	host := testing.Benchmark(BenchmarkHostCall)
	raw := testing.Benchmark(BenchmarkRawExtism)
	fresh := testing.Benchmark(BenchmarkFreshInstance)
	ratio := float64(host.NsPerOp()) / float64(raw.NsPerOp())
	fmt.Printf("sandbox Module.Call  %8d ns/op  %6d B/op  %4d allocs/op\n", host.NsPerOp(), host.AllocedBytesPerOp(), host.AllocsPerOp())
	fmt.Printf("raw extism call      %8d ns/op  %6d B/op  %4d allocs/op\n", raw.NsPerOp(), raw.AllocedBytesPerOp(), raw.AllocsPerOp())
	fmt.Printf("fresh instance call  %8d ns/op\n", fresh.NsPerOp())
	fmt.Printf("overhead ratio %.2fx (target <= 1.20x); pooled is %.0fx faster than fresh\n",
		ratio, float64(fresh.NsPerOp())/float64(host.NsPerOp()))
	if ratio > 1.2 {
		t.Errorf("overhead ratio %.2fx is above the 1.2x target", ratio)
	}
	if speedup := float64(fresh.NsPerOp()) / float64(host.NsPerOp()); speedup < 10 {
		t.Errorf("a pooled call is only %.1fx faster than a fresh instance; the pool should make it at least 10x", speedup)
	}
}
