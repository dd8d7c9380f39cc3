package sandbox

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// With WithCloseOnContextDone, wazero starts a goroutine (and a channel) to
// watch the context of every call into wasm, even one whose context cannot
// be cancelled. Every Extism kernel function is such a call: an echo call
// made ~20 of them, most to read or write a byte or a field. The kernel
// functions that leave the kernel's allocator alone are done here in Go
// instead, on the same bytes of the kernel's memory, as go-sdk already does
// load_u64, store_u64 and input_load_u64:
//   - the readers of its MemoryRoot: input_length, input_offset,
//     input_load_u8 (the tail of every input, byte by byte), output_offset,
//     output_length and error_get. They write nothing, so the kernel's state
//     stays the kernel's;
//   - load_u8 and store_u8 (the tail of every output), with the kernel's
//     bounds check.
//
// The ones that change the allocator or the MemoryRoot (reset, alloc, free,
// input_set, output_set, error_set, length, …) still run in the kernel.
//
// MemoryRoot is a repr(C) struct at address 1 of the kernel's memory
// (extism kernel/src/lib.rs, embedded in go-sdk v1.7.1 as
// extism-runtime.wasm v1.7.0): initialized (bool) at 1, then the u64s
// position, length, error, input_offset, input_length, output_offset,
// output_length, 64 bytes in all. TestKernelInGoMatchesKernel compares
// every function here with the kernel's own, so a go-sdk upgrade that moves
// a field fails it.
const (
	rootError        = 25
	rootInputOffset  = 33
	rootInputLength  = 41
	rootOutputOffset = 49
	rootOutputLength = 57
	// rootEnd is the first address load_u8 and store_u8 accept
	// (MemoryRoot::pointer_in_bounds_fast).
	rootEnd = 64
)

// kernelInGo are the kernel functions done in Go, by name. Each works on
// the kernel's memory mem with the function's parameters in stack and leaves
// its result, if any, in stack[0].
var kernelInGo = map[string]func(mem api.Memory, stack []uint64) error{
	"input_length":  readRootField(rootInputLength),
	"input_offset":  readRootField(rootInputOffset),
	"output_length": readRootField(rootOutputLength),
	"output_offset": readRootField(rootOutputOffset),
	"error_get":     readRootField(rootError),
	"input_load_u8": inputLoadU8,
	"load_u8":       loadU8,
	"store_u8":      storeU8,
}

// rootField reads the MemoryRoot field at addr; a memory too small to hold
// it reads 0, as the kernel's fields read before its first call.
func rootField(mem api.Memory, addr uint32) uint64 {
	v, _ := mem.ReadUint64Le(addr)
	return v
}

func readRootField(addr uint32) func(api.Memory, []uint64) error {
	return func(mem api.Memory, stack []uint64) error {
		stack[0] = rootField(mem, addr)
		return nil
	}
}

// inputLoadU8 is the kernel's input_load_u8: the input's byte at offset
// stack[0], 0 at or past the input's end.
func inputLoadU8(mem api.Memory, stack []uint64) error {
	off := stack[0]
	stack[0] = 0
	if off >= rootField(mem, rootInputLength) {
		return nil
	}
	addr := rootField(mem, rootInputOffset) + off
	b, ok := mem.ReadByte(uint32(addr))
	if !ok {
		return fmt.Errorf("input_load_u8: input byte at %d is outside the kernel's memory", addr)
	}
	stack[0] = uint64(b)
	return nil
}

// inBounds is MemoryRoot::pointer_in_bounds_fast: p is past the MemoryRoot
// and at most the memory's size (the kernel accepts the size itself, where
// its access then traps).
func inBounds(mem api.Memory, p uint64) bool {
	return p >= rootEnd && p <= uint64(mem.Size())
}

// loadU8 is the kernel's load_u8: the byte at stack[0], 0 out of bounds.
func loadU8(mem api.Memory, stack []uint64) error {
	p := stack[0]
	stack[0] = 0
	if !inBounds(mem, p) {
		return nil
	}
	b, ok := mem.ReadByte(uint32(p))
	if !ok {
		return fmt.Errorf("load_u8: %d is outside the kernel's memory", p)
	}
	stack[0] = uint64(b)
	return nil
}

// storeU8 is the kernel's store_u8: the byte stack[1] at stack[0], nothing
// out of bounds.
func storeU8(mem api.Memory, stack []uint64) error {
	p := stack[0]
	if !inBounds(mem, p) {
		return nil
	}
	if !mem.WriteByte(uint32(p), byte(stack[1])) {
		return fmt.Errorf("store_u8: %d is outside the kernel's memory", p)
	}
	return nil
}

// goKernelFunc is a kernel function done in Go. The kernel's own function
// supplies its definition (name, parameter and result types).
type goKernelFunc struct {
	api.Function
	mem api.Memory
	run func(api.Memory, []uint64) error
}

// CallWithStack runs the function over stack, which holds the parameters
// and, after, the result.
func (f *goKernelFunc) CallWithStack(_ context.Context, stack []uint64) error {
	return f.run(f.mem, stack)
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
