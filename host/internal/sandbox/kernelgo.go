package sandbox

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// With WithCloseOnContextDone, wazero starts a goroutine (and a channel) to
// watch the context of every call into wasm, even one whose context cannot
// be cancelled. Every Extism kernel function is such a call: an echo call
// made ~20 of them, most to read or write a byte or a field, and the host's
// reset, alloc and input_set alone were a third of a call's CPU. So the
// whole kernel is done here in Go instead, on the same bytes of the
// kernel's memory: the allocator (alloc, free, length, length_unsafe,
// reset, memory_bytes; kernelalloc.go), the MemoryRoot's setters
// (input_set, output_set, error_set) and readers (input_length,
// input_offset, input_load_u8/u64, output_offset, output_length,
// error_get), and load_u8/u64 and store_u8/u64 with the kernel's bounds
// checks. Each initialises the MemoryRoot on the kernel's first use where
// the kernel's function does (MemoryRoot::new).
//
// go-sdk's own CurrentPlugin.Alloc, Free and Length (config_get, var_get,
// the log functions, http_request) still call the kernel's wasm functions
// on the same memory, so the two must agree byte for byte:
// TestKernelInGoMatchesKernel runs fixed and random sequences of kernel
// operations on two instances, one through the kernel's functions and one
// through these, and compares every result and the whole memory after each
// operation. The layout is the one of the kernel embedded in go-sdk v1.7.1
// (extism-runtime.wasm v1.7.0, kernelmem.go); an upgrade that changes it
// fails that test.

// kernelInGo are the kernel functions done in Go, by name. Each works on
// the kernel's memory with the function's parameters in stack and leaves
// its result, if any, in stack[0]; ctx bounds the walks over the block
// list (the guest's call context, or the host's bookkeeping's).
var kernelInGo = map[string]func(ctx context.Context, k *kmem, stack []uint64) error{
	"alloc": func(ctx context.Context, k *kmem, s []uint64) (err error) {
		s[0], err = kAlloc(ctx, k, s[0])
		return err
	},
	"free": func(ctx context.Context, k *kmem, s []uint64) error { return kFree(ctx, k, s[0]) },
	"length": func(ctx context.Context, k *kmem, s []uint64) (err error) {
		s[0], err = kLength(ctx, k, s[0])
		return err
	},
	"length_unsafe": func(_ context.Context, k *kmem, s []uint64) (err error) {
		s[0], err = kLengthUnsafe(k, s[0])
		return err
	},
	"reset": func(_ context.Context, k *kmem, _ []uint64) error { return kReset(k) },
	"input_set": func(_ context.Context, k *kmem, s []uint64) error {
		return kSetRange(k, rootInputOffset, rootInputLength, s[0], s[1])
	},
	"output_set": func(_ context.Context, k *kmem, s []uint64) error {
		return kSetRange(k, rootOutputOffset, rootOutputLength, s[0], s[1])
	},
	"error_set":      func(_ context.Context, k *kmem, s []uint64) error { return kErrorSet(k, s[0]) },
	"memory_bytes":   readRootField(rootLength),
	"input_length":   readRootField(rootInputLength),
	"input_offset":   readRootField(rootInputOffset),
	"output_length":  readRootField(rootOutputLength),
	"output_offset":  readRootField(rootOutputOffset),
	"error_get":      readRootField(rootError),
	"input_load_u8":  inputLoad(1),
	"input_load_u64": inputLoad(8),
	"load_u8":        loadU8,
	"load_u64":       loadU64,
	"store_u8":       storeU8,
	"store_u64":      storeU64,
}

// readRootField is a reader of the MemoryRoot field at addr.
func readRootField(addr uint32) func(context.Context, *kmem, []uint64) error {
	return func(_ context.Context, k *kmem, stack []uint64) error {
		if err := k.root(); err != nil {
			return err
		}
		stack[0] = k.get(addr)
		return nil
	}
}

// inputLoad is the kernel's input_load_u8 (size 1) or input_load_u64
// (size 8): the input's byte or u64 at offset stack[0], 0 when it would
// end past the input's end.
func inputLoad(size uint64) func(context.Context, *kmem, []uint64) error {
	return func(_ context.Context, k *kmem, stack []uint64) (err error) {
		if err := k.root(); err != nil {
			return err
		}
		off := stack[0]
		stack[0] = 0
		// The kernel's checks: off < length for a byte, off+8 <= length
		// (wrapping) for a u64.
		if n := k.get(rootInputLength); size == 1 && off >= n || size == 8 && off+8 > n {
			return nil
		}
		addr := uint32(k.get(rootInputOffset) + off)
		if size == 1 {
			b, err := k.load8(addr)
			stack[0] = uint64(b)
			return err
		}
		stack[0], err = k.load64(addr)
		return err
	}
}

// inBounds is MemoryRoot::pointer_in_bounds_fast: p is past the MemoryRoot
// and at most the memory's size (the kernel accepts the size itself, where
// its access then traps). The u64 functions check their last byte, p+7.
func inBounds(k *kmem, p uint64) bool { return p >= rootEnd && p <= k.size() }

// loadU8 is the kernel's load_u8: the byte at stack[0], 0 out of bounds.
func loadU8(_ context.Context, k *kmem, stack []uint64) error {
	p := stack[0]
	stack[0] = 0
	if !inBounds(k, p) {
		return nil
	}
	b, err := k.load8(uint32(p))
	stack[0] = uint64(b)
	return err
}

// loadU64 is the kernel's load_u64: the u64 at stack[0], 0 out of bounds.
func loadU64(_ context.Context, k *kmem, stack []uint64) (err error) {
	p := stack[0]
	stack[0] = 0
	if !inBounds(k, p+7) {
		return nil
	}
	stack[0], err = k.load64(uint32(p))
	return err
}

// storeU8 is the kernel's store_u8: the byte stack[1] at stack[0], nothing
// out of bounds.
func storeU8(_ context.Context, k *kmem, stack []uint64) error {
	if !inBounds(k, stack[0]) {
		return nil
	}
	return k.store8(uint32(stack[0]), byte(stack[1]))
}

// storeU64 is the kernel's store_u64: the u64 stack[1] at stack[0], nothing
// out of bounds.
func storeU64(_ context.Context, k *kmem, stack []uint64) error {
	if !inBounds(k, stack[0]+7) {
		return nil
	}
	return k.store64(uint32(stack[0]), stack[1])
}

// goKernelFunc is a kernel function done in Go. The kernel's export
// supplies its definition (name, parameter and result types); no wazero
// function (call engine and stack) is made for it. The embedded
// api.Function is nil: it only marks the type as an api.Function.
type goKernelFunc struct {
	api.Function
	def api.FunctionDefinition
	mem api.Memory
	run func(context.Context, *kmem, []uint64) error
	k   kmem // the memory's view during a call (a local would escape)
}

// Definition is the kernel function's definition.
func (f *goKernelFunc) Definition() api.FunctionDefinition { return f.def }

// CallWithStack runs the function over stack, which holds the parameters
// and, after, the result.
// Like the instance, it serves one call at a time.
func (f *goKernelFunc) CallWithStack(ctx context.Context, stack []uint64) error {
	f.k = kernelMem(f.mem)
	err := f.run(ctx, &f.k, stack)
	f.k = kmem{} // hold no view of a buffer the memory may replace
	return err
}

// Call runs the function with params and returns its results.
func (f *goKernelFunc) Call(ctx context.Context, params ...uint64) ([]uint64, error) {
	def := f.Definition()
	if len(params) != len(def.ParamTypes()) {
		return nil, fmt.Errorf("%s: %d parameters, want %d", def.Name(), len(params), len(def.ParamTypes()))
	}
	stack := make([]uint64, max(len(params), len(def.ResultTypes())))
	copy(stack, params)
	if err := f.CallWithStack(ctx, stack); err != nil {
		return nil, err
	}
	return stack[:len(def.ResultTypes())], nil
}
