package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/google/go-cmp/cmp"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// mustCompiled compiles testdata/<fixture>.wasm (hostile by default) with
// plain Extism.
func mustCompiled(t testing.TB, fixture ...string) *extism.CompiledPlugin {
	t.Helper()
	name := "hostile"
	if len(fixture) > 0 {
		name = fixture[0]
	}
	wasm, err := os.ReadFile("testdata/" + name + ".wasm")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(ctx) })
	return c
}

func mustInstance(t testing.TB, c *extism.CompiledPlugin) *extism.Plugin {
	t.Helper()
	p, err := c.Instance(context.Background(), extism.PluginInstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// TestFastCallIsUsed fails when go-sdk's Plugin no longer has the fields
// fastCall reads (after an upgrade): the sandbox would silently fall back to
// the slow CallWithContext.
func TestFastCallIsUsed(t *testing.T) {
	t.Parallel()
	if _, ok := newFastCall(mustInstance(t, mustCompiled(t))); !ok {
		t.Fatal("go-sdk's Plugin has no extism/mainModule fields of type api.Module: update fastcall.go")
	}
}

// outcome is what a call returned, in comparable form.
type outcome struct {
	RC       uint32
	Out      string
	Err      string
	Exit     int64 // -1: not an exit error
	Wrapped  bool  // the error wraps a cause (traps do; plugin errors do not)
	Deadline bool
}

func outcomeOf(rc uint32, out []byte, err error) outcome {
	o := outcome{RC: rc, Out: string(out), Exit: -1}
	if err != nil {
		o.Err = firstLine(err.Error())
		o.Wrapped = errors.Unwrap(err) != nil
		var ee *sys.ExitError
		if errors.As(err, &ee) {
			o.Exit = int64(ee.ExitCode())
			o.Deadline = ee.ExitCode() == sys.ExitCodeDeadlineExceeded
		}
	}
	return o
}

// TestFastCallMatchesExtism: on fresh instances, fastCall returns exactly
// what Plugin.CallWithContext returns, for every outcome the classification
// tells apart.
func TestFastCallMatchesExtism(t *testing.T) {
	t.Parallel()
	c, tail := mustCompiled(t), mustCompiled(t, "input_tail")
	tests := []struct {
		function string
		input    string
		timeout  time.Duration
	}{
		{"echo", `{"text":"hello"}`, 0},
		{"echo", "", 0},
		{"echo", "0123456789abcdefg", 0},
		{"input_tail", "hi", 0},
		{"input_tail", "", 0},
		{"fail", "{}", 0},
		{"fail_text", "{}", 0},
		{"trap", "{}", 0},
		{"recurse", "{}", 0},
		{"huge_output", "{}", 0},
		{"loop", "{}", 50 * time.Millisecond},
		{"no_such_export", "{}", 0},
	}
	for _, tt := range tests {
		t.Run(tt.function, func(t *testing.T) {
			t.Parallel()
			run := func(call func(ctx context.Context, fn string, in []byte) (uint32, []byte, error)) outcome {
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				o := outcomeOf(call(ctx, tt.function, []byte(tt.input)))
				if len(o.Out) > 64 { // huge_output: compare its size, not 8 MiB of text
					o.Out = fmt.Sprintf("%d bytes", len(o.Out))
				}
				return o
			}
			c := c
			if tt.function == "input_tail" {
				c = tail
			}
			want := run(mustInstance(t, c).CallWithContext)
			fc, ok := newFastCall(mustInstance(t, c))
			if !ok {
				t.Fatal("no fast path")
			}
			got := run(fc.call)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fastCall differs from CallWithContext (-extism +fast):\n%s", diff)
			}
		})
	}
}

// TestFastCallReusesKernelHandles: repeated calls on one instance allocate
// a fraction of what CallWithContext does (which builds ~20 function
// handles with a 10 KiB stack each per call), and keep answering right.
func TestFastCallReusesKernelHandles(t *testing.T) {
	c := mustCompiled(t)
	input := []byte(`{"text":"hello, allocations"}`)
	allocated := func(call func(ctx context.Context, fn string, in []byte) (uint32, []byte, error)) uint64 {
		const calls = 200
		for range 10 { // warm up: first calls create what is kept
			_, _, _ = call(context.Background(), "echo", input)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range calls {
			if _, out, err := call(context.Background(), "echo", input); err != nil || string(out) != string(input) {
				t.Fatalf("echo: %q, %v", out, err)
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / calls
	}
	raw := allocated(mustInstance(t, c).CallWithContext)
	fc, _ := newFastCall(mustInstance(t, c))
	fast := allocated(fc.call)
	t.Logf("bytes allocated per echo call: CallWithContext %d, fastCall %d", raw, fast)
	if fast*3 > raw {
		t.Errorf("fastCall allocates %d bytes per call, CallWithContext %d: expected at most a third", fast, raw)
	}
}
