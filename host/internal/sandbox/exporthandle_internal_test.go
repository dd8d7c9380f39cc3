package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExportHandleIsKept: a guest export's handle is kept across calls on
// one instance and made anew only after a call that grew its stack (a deep
// recursion, whose grown stack the idle instance must not hold) or failed.
// It fails when wazero's call engine no longer has the stack field
// exporthandle.go reads (then a handle is made per call: correct, slower).
func TestExportHandleIsKept(t *testing.T) {
	t.Parallel()
	fc, ok := newFastCall(mustInstance(t, mustCompiled(t)))
	if !ok {
		t.Fatal("no fast path")
	}
	fn := fc.main.ExportedFunction("echo")
	if _, ok := stackLen(fn); !ok {
		t.Fatalf("%T has no stack []byte field: update exporthandle.go for this wazero", fn)
	}

	tests := []struct {
		fixture string
		calls   []string
		// made is the handles made after each call (one is kept, for the
		// last export called); kept whether one is kept after the last.
		made []int
		kept bool
	}{
		{"hostile", []string{"echo", "echo", "echo", "echo"}, []int{1, 1, 1, 1}, true},
		{"hostile", []string{"echo", "trap", "trap", "echo"}, []int{1, 2, 3, 4}, true}, // a trap drops it
		{"hostile", []string{"fail", "fail", "echo"}, []int{1, 1, 2}, true},            // a plugin error does not
		{"hostile", []string{"echo", "recurse"}, []int{1, 2}, false},                   // stack overflow
		{"stack_hog", []string{"echo", "echo", "deep"}, []int{1, 1, 2}, false},
		{"stack_hog", []string{"deep", "deep", "echo", "echo"}, []int{1, 2, 3, 3}, true},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+" "+strings.Join(tt.calls, ","), func(t *testing.T) {
			t.Parallel()
			fc, _ := newFastCall(mustInstance(t, mustCompiled(t, tt.fixture)))
			var made []int
			for _, name := range tt.calls {
				_, _, _ = fc.call(context.Background(), name, []byte(`{"text":"hi"}`))
				made = append(made, fc.handlesMade)
			}
			if diff := cmp.Diff(tt.made, made); diff != "" {
				t.Errorf("handles made after each call (-want +got):\n%s", diff)
			}
			if kept := fc.kept.fn != nil; kept != tt.kept {
				t.Errorf("a handle kept after the calls: %v, want %v", kept, tt.kept)
			}
			if fc.kept.fn != nil {
				if n, _ := stackLen(fc.kept.fn); n != fc.kept.stack {
					t.Errorf("the kept handle's stack is %d bytes, made with %d", n, fc.kept.stack)
				}
			}
		})
	}
}
