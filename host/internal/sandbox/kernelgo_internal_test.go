package sandbox

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tetratelabs/wazero/api"
)

// TestKernelInGoMatchesKernel: every kernel function done in Go answers
// what the kernel's own function answers, and store_u8 writes what the
// kernel's writes, on a fresh instance and after calls that set the input,
// the output and an error. A go-sdk upgrade that moves a MemoryRoot field
// or changes a bounds check fails here.
func TestKernelInGoMatchesKernel(t *testing.T) {
	t.Parallel()
	c := mustCompiled(t)
	tests := []struct {
		name     string
		function string // "" calls nothing first
		input    string
	}{
		{"fresh instance", "", ""},
		{"after echo", "echo", `{"text":"hello, kernel"}`},
		{"after an empty input", "echo", ""},
		{"after a plugin error", "fail", "{}"},
		{"after a trap", "trap", "0123456789"},
	}
	names := make([]string, 0, len(kernelInGo))
	for name := range kernelInGo {
		if name != "store_u8" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			fc, ok := newFastCall(mustInstance(t, c))
			if !ok {
				t.Fatal("no fast path")
			}
			if tt.function != "" {
				_, _, _ = fc.call(ctx, tt.function, []byte(tt.input))
			}
			mem := fc.kernel.Memory()
			size := uint64(mem.Size())
			// Addresses around the MemoryRoot's end and the memory's end,
			// where the bounds checks decide.
			addrs := []uint64{0, 1, rootEnd - 1, rootEnd, rootEnd + 1, 200, size - 1, size, size + 1, 1 << 40}
			inGo := func(name string) api.Function {
				f := fc.kernel.ExportedFunction(name)
				if _, ok := f.(*goKernelFunc); !ok {
					t.Fatalf("%s is %T, not done in Go", name, f)
				}
				return f
			}
			inKernel := func(name string) api.Function { return fc.kernel.Module.ExportedFunction(name) }

			// The ones done in Go answer first: on a fresh instance the
			// kernel's functions initialise its MemoryRoot, Go's never do.
			answers := func(lookup func(string) api.Function) map[string]string {
				out := map[string]string{}
				for _, name := range names {
					params := [][]uint64{nil}
					switch name {
					case "input_load_u8":
						params = nil
						for off := range uint64(len(tt.input) + 3) {
							params = append(params, []uint64{off})
						}
					case "load_u8":
						params = nil
						for _, a := range addrs {
							params = append(params, []uint64{a})
						}
					}
					for _, p := range params {
						f := lookup(name)
						res, err := f.Call(ctx, p...)
						// An i32 result is the low half of its slot (wazero
						// may leave a parameter's high bits in the rest).
						if len(res) == 1 && f.Definition().ResultTypes()[0] == api.ValueTypeI32 {
							res[0] = uint64(api.DecodeU32(res[0]))
						}
						out[fmt.Sprint(name, p)] = answer(res, err)
					}
				}
				return out
			}
			got := answers(inGo)
			want := answers(inKernel)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Go differs from the kernel (-kernel +Go):\n%s", diff)
			}
			if tt.function == "echo" {
				if n, want := got["input_length[]"], answer([]uint64{uint64(len(tt.input))}, nil); n != want {
					t.Errorf("input_length = %s, want %s", n, want)
				}
			}

			// store_u8: what each writes at each address, the byte put back
			// in between.
			stores := func(lookup func(string) api.Function) map[uint64]string {
				out := map[uint64]string{}
				for _, a := range addrs {
					before, _ := mem.ReadByte(uint32(a))
					_, err := lookup("store_u8").Call(ctx, a, 0xA5)
					after, _ := mem.ReadByte(uint32(a))
					out[a] = fmt.Sprintf("%#x, %s", after, answer(nil, err))
					if a < size {
						mem.WriteByte(uint32(a), before)
					}
				}
				return out
			}
			gotStores := stores(inGo)
			if diff := cmp.Diff(stores(inKernel), gotStores); diff != "" {
				t.Errorf("store_u8 in Go differs from the kernel's (-kernel +Go):\n%s", diff)
			}
			if s := gotStores[200]; s != "0xa5, [] <nil>" {
				t.Errorf("store_u8 at 200: %s, want the byte written", s)
			}
		})
	}
}

// answer is a call's results and whether it failed (a trap in the kernel,
// an error in Go: their texts differ).
func answer(res []uint64, err error) string {
	if err != nil {
		return fmt.Sprint(res, " error")
	}
	return fmt.Sprint(res, " <nil>")
}
