package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/sandbox"
)

var update = flag.Bool("update", false, "rewrite the generated fixtures in testdata/shape")

// leb is n as an unsigned LEB128.
func leb(n uint64) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// section is a section with its id and size.
func section(id byte, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	return append(append([]byte{id}, leb(uint64(len(b)))...), b...)
}

// module is the wasm header followed by sections.
func module(sections ...[]byte) []byte {
	return append([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}, bytes.Join(sections, nil)...)
}

// oneFunc is a module with one function () -> () exported as "run", whose
// body is locals (the local declarations, count first) then "end".
func oneFunc(locals []byte) []byte {
	body := append(append([]byte{}, locals...), 0x0b)
	return module(
		section(1, []byte{0x01, 0x60, 0x00, 0x00}),
		section(3, []byte{0x01, 0x00}),
		section(7, []byte{0x01, 0x03, 'r', 'u', 'n', 0x00, 0x00}),
		section(10, leb(1), leb(uint64(len(body))), body),
	)
}

// manyFuncs is a module with n functions () -> () whose bodies are locals
// (the local declarations, count first) then "end". 100,000 functions of
// 50,000 locals each (800 KB, every function within the per-function
// limit) made wazero use more than 6.5 GB before the total was capped.
func manyFuncs(n int, locals []byte) []byte {
	body := append(append([]byte{}, locals...), 0x0b)
	code := bytes.Repeat(append(leb(uint64(len(body))), body...), n)
	return module(
		section(1, []byte{0x01, 0x60, 0x00, 0x00}),
		section(3, leb(uint64(n)), make([]byte, n)),
		section(10, leb(uint64(n)), code),
	)
}

// hostileShapes are modules a few dozen bytes long that declare counts
// wazero would allocate for before compiling: the locals of the attacker
// review (2^32-1 locals killed the host; 20 million kept ~550 MiB), and a
// count or length far past the module's bytes in every other place
// wazero's decoder sizes a slice from one. wat2wasm cannot express them, so
// they are generated here and committed as testdata/shape/<name>.wasm
// (TestShapeFixturesUpToDate; -update rewrites them).
var hostileShapes = []struct {
	name string
	wasm []byte
	want string // in the refusal
}{
	{"locals_4g", oneFunc([]byte{0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7f}), "function 0 declares 4294967295 locals, over the sandbox limit of 50000"},
	{"locals_20m", oneFunc(append(append([]byte{0x01}, leb(20_000_000)...), 0x7e)), "function 0 declares 20000000 locals"},
	{"locals_split", oneFunc(bytes.Join([][]byte{{0x02}, leb(25_001), {0x7f}, leb(25_001), {0x7f}}, nil)), "function 0 declares 50002 locals"},
	{"locals_spread", manyFuncs(21, bytes.Join([][]byte{{0x01}, leb(50_000), {0x7f}}, nil)),
		"the code section declares 1050000 locals in all functions, over the sandbox limit of 1000000"},
	{"types_4g", module(section(1, leb(1<<32-1))), "the type section declares 4294967295 types"},
	{"params_4g", module(section(1, []byte{0x01, 0x60}, leb(1<<32-1))), "type 0 declares 4294967295 parameters"},
	{"imports_4g", module(section(2, leb(1<<32-1))), "the import section declares 4294967295 imports"},
	{"functions_4g", module(section(3, leb(1<<32-1))), "4294967295 functions"},
	{"globals_4g", module(section(6, leb(1<<32-1))), "4294967295 globals"},
	{"exports_4g", module(section(7, leb(1<<32-1))), "4294967295 exports"},
	{"elements_4g", module(section(9, leb(1<<32-1))), "4294967295 element segments"},
	{"element_items_4g", module(section(9, []byte{0x01, 0x01, 0x00}, leb(1<<32-1))), "4294967295 items"},
	{"code_4g", module(section(10, leb(1<<32-1))), "4294967295 function bodies"},
	{"data_segments_4g", module(section(11, leb(1<<32-1))), "4294967295 data segments"},
	{"data_bytes_4g", module(section(11, []byte{0x01, 0x01}, leb(1<<32-1))), "data segment 0: truncated"},
	{"custom_name_4g", module(section(0, leb(1<<32-1))), "custom section name: truncated"},
	{"name_functions_4g", module(section(0, []byte{0x04, 'n', 'a', 'm', 'e', 0x01, 0x05}, leb(1<<32-1))), "4294967295 names"},
}

// TestShapeFixturesUpToDate: the committed hostile modules are the ones
// generated above (so the bytes under review are the bytes tested).
func TestShapeFixturesUpToDate(t *testing.T) {
	t.Parallel()
	for _, h := range hostileShapes {
		path := filepath.Join("testdata", "shape", h.name+".wasm")
		if *update {
			if err := os.WriteFile(path, h.wasm, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestShapeFixturesUpToDate -update writes it)", err)
		}
		if !bytes.Equal(got, h.wasm) {
			t.Errorf("%s differs from its generator (go test -run TestShapeFixturesUpToDate -update)", path)
		}
	}
}

// TestInspectRefusesHostileShapes: every hostile module is refused by
// Inspect, naming the limit and the declared value.
func TestInspectRefusesHostileShapes(t *testing.T) {
	t.Parallel()
	for _, h := range hostileShapes {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			_, err := sandbox.Inspect(context.Background(), mustShape(t, h.name))
			if !errors.Is(err, sandbox.ErrInvalidModule) || !strings.Contains(err.Error(), h.want) {
				t.Fatalf("Inspect = %v, want ErrInvalidModule mentioning %q", err, h.want)
			}
		})
	}
}

// TestLoadRefusesHostileShapesWithoutAllocating loads each hostile module
// into a real runtime and measures what the refusal allocated: before
// the shape checks, locals_4g made wazero allocate 4 GiB while decoding
// (and its compiler far more), so this test is sequential (nothing else
// allocates meanwhile) and allows 32 MiB.
func TestLoadRefusesHostileShapesWithoutAllocating(t *testing.T) {
	rt := mustRuntime(t)
	const allowed = 32 << 20
	for _, h := range hostileShapes {
		wasm := mustShape(t, h.name)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: h.name, Wasm: wasm})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, sandbox.ErrInvalidModule) {
			t.Errorf("%s: Load = %v, want ErrInvalidModule", h.name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > allowed {
			t.Errorf("%s: refusing it allocated %d MiB, want < %d MiB", h.name, got>>20, allowed>>20)
		}
	}
}

func mustShape(t *testing.T, name string) []byte {
	t.Helper()
	return mustFixture(t, filepath.Join("shape", name))
}

// TestShapeLimitsEachField: declares.wasm passes the defaults and reports
// its shape; each limit set one below what it declares refuses it with a
// *LimitError naming that limit.
func TestShapeLimitsEachField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wasm := mustShape(t, "declares")
	info, err := sandbox.Inspect(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.ModuleShape{
		Types: 6, Functions: 6, Globals: 3, Exports: 4, ElementSegments: 2, ElementItems: 5, PassiveItems: 3,
		DataSegments: 2, Locals: 5, MaxLocals: 4, MaxFrameSlots: 6, MaxBodyBytes: 10, CodeBytes: 22,
	}
	if diff := cmp.Diff(want, info.Shape); diff != "" {
		t.Errorf("shape (-want +got):\n%s", diff)
	}
	tests := []struct {
		limit string
		set   func(*sandbox.ShapeLimits)
	}{
		{"types", func(l *sandbox.ShapeLimits) { l.Types = 5 }},
		{"imports", func(l *sandbox.ShapeLimits) { l.Imports = 1 }},
		{"functions (imported ones included)", func(l *sandbox.ShapeLimits) { l.Functions = 5 }},
		{"parameters", func(l *sandbox.ShapeLimits) { l.Params = 1 }},
		{"results", func(l *sandbox.ShapeLimits) { l.Results = 1 }},
		{"locals", func(l *sandbox.ShapeLimits) { l.Locals = 3 }},
		{"locals in all functions", func(l *sandbox.ShapeLimits) { l.TotalLocals = 4 }},
		{"bytes of code", func(l *sandbox.ShapeLimits) { l.BodyBytes = 9 }},
		{"globals (imported ones included)", func(l *sandbox.ShapeLimits) { l.Globals = 2 }},
		{"tables (imported ones included)", func(l *sandbox.ShapeLimits) { l.Tables = 1 }},
		{"exports", func(l *sandbox.ShapeLimits) { l.Exports = 3 }},
		{"element segments", func(l *sandbox.ShapeLimits) { l.ElementSegments = 1 }},
		{"items in all element segments", func(l *sandbox.ShapeLimits) { l.ElementItems = 4 }},
		{"data segments", func(l *sandbox.ShapeLimits) { l.DataSegments = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.limit, func(t *testing.T) {
			t.Parallel()
			lim := sandbox.DefaultShapeLimits()
			tt.set(&lim)
			_, err := sandbox.InspectWithLimits(ctx, wasm, lim)
			var le *sandbox.LimitError
			if !errors.As(err, &le) || !errors.Is(err, sandbox.ErrShapeLimit) || !errors.Is(err, sandbox.ErrInvalidModule) {
				t.Fatalf("InspectWithLimits = %v, want a *LimitError", err)
			}
			if le.Limit != tt.limit || le.Value != le.Max+1 {
				t.Errorf("refused for %q (%d > %d), want %q one over its cap", le.Limit, le.Value, le.Max, tt.limit)
			}
		})
	}
}

// TestDefaultShapeLimitsAtTheBoundary builds modules exactly at and one
// over the default count limits (too large to commit) and checks that the
// first passes and the second is refused.
func TestDefaultShapeLimitsAtTheBoundary(t *testing.T) {
	t.Parallel()
	lim := sandbox.DefaultShapeLimits()
	globals := func(n uint32) []byte {
		g := bytes.Repeat([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b}, int(n)) // (global (mut i32) (i32.const 0))
		return module(section(6, leb(uint64(n)), g))
	}
	functions := func(n uint32) []byte {
		return module(
			section(1, []byte{0x01, 0x60, 0x00, 0x00}),
			section(3, leb(uint64(n)), make([]byte, n)),
			section(10, leb(uint64(n)), bytes.Repeat([]byte{0x02, 0x00, 0x0b}, int(n))),
		)
	}
	body := func(n uint32) []byte { // one body of n bytes: no locals, nops, end
		code := append(append([]byte{0x00}, bytes.Repeat([]byte{0x01}, int(n)-2)...), 0x0b)
		return module(section(1, []byte{0x01, 0x60, 0x00, 0x00}), section(3, []byte{0x01, 0x00}),
			section(10, leb(1), leb(uint64(n)), code))
	}
	tests := []struct {
		name string
		make func(uint32) []byte
		max  uint32
	}{
		{"globals", globals, lim.Globals},
		{"functions", functions, lim.Functions},
		{"body bytes", body, lim.BodyBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := sandbox.Inspect(context.Background(), tt.make(tt.max)); err != nil {
				t.Errorf("at the limit (%d): %v", tt.max, err)
			}
			if _, err := sandbox.Inspect(context.Background(), tt.make(tt.max+1)); !errors.Is(err, sandbox.ErrShapeLimit) {
				t.Errorf("one over the limit (%d): %v, want ErrShapeLimit", tt.max+1, err)
			}
		})
	}
}
