package sandbox

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tetratelabs/wazero/api"
)

// TestKernelRootMatchesKernel: every kernel function done in Go answers
// what the kernel's own function answers, on a fresh instance and after
// calls that set the input, the output and an error. A go-sdk upgrade that
// moves a MemoryRoot field fails here.
func TestKernelRootMatchesKernel(t *testing.T) {
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
	names := make([]string, 0, len(rootReaders))
	for name := range rootReaders {
		names = append(names, name)
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
			// The Go readers answer first: on a fresh instance the kernel's
			// functions initialise its MemoryRoot, the readers never write.
			answers := func(lookup func(string) api.Function) map[string]string {
				out := map[string]string{}
				for _, name := range names {
					params := [][]uint64{nil}
					if name == "input_load_u8" {
						params = nil
						for off := range uint64(len(tt.input) + 3) {
							params = append(params, []uint64{off})
						}
					}
					for _, p := range params {
						res, err := lookup(name).Call(ctx, p...)
						out[fmt.Sprint(name, p)] = fmt.Sprint(res, err)
					}
				}
				return out
			}
			got := answers(func(name string) api.Function {
				f := fc.kernel.ExportedFunction(name)
				if _, ok := f.(*rootFunc); !ok {
					t.Fatalf("%s is %T, not done in Go", name, f)
				}
				return f
			})
			want := answers(func(name string) api.Function { return fc.kernel.Module.ExportedFunction(name) })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Go readers differ from the kernel (-kernel +Go):\n%s", diff)
			}
			if tt.function == "echo" {
				if n := got["input_length[]"]; n != fmt.Sprint([]uint64{uint64(len(tt.input))}, nil) {
					t.Errorf("input_length = %s, want %d", n, len(tt.input))
				}
			}
		})
	}
}
