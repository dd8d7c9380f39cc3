package sandbox

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// With WithCloseOnContextDone, wazero starts a goroutine (and a channel) to
// watch the context of every call into wasm, even one whose context cannot
// be cancelled. Every Extism kernel function is such a call: an echo call
// made ~16 of them, each paying for a goroutine to read or write a few
// bytes. The kernel functions that only read the kernel's MemoryRoot are
// done here in Go instead, reading the same bytes of the kernel's memory:
// input_length, input_offset, input_load_u8 (the tail of every input, byte
// by byte), output_offset, output_length and error_get. They write
// nothing, so the kernel's state stays the kernel's; the ones that write
// (reset, alloc, input_set, output_set, store_u8, …) still run in the
// kernel.
//
// MemoryRoot is a repr(C) struct at address 1 of the kernel's memory
// (extism kernel/src/lib.rs, embedded in go-sdk v1.7.1 as
// extism-runtime.wasm v1.7.0): initialized (bool) at 1, then the u64s
// position, length, error, input_offset, input_length, output_offset,
// output_length. TestKernelRootMatchesKernel compares every reader here
// with the kernel's own function, so a go-sdk upgrade that moves a field
// fails it.
const (
	rootError        = 25
	rootInputOffset  = 33
	rootInputLength  = 41
	rootOutputOffset = 49
	rootOutputLength = 57
)

// rootReaders are the kernel functions done in Go, by name. Each reads the
// kernel's memory mem with the function's parameters in stack and leaves
// its result in stack[0].
var rootReaders = map[string]func(mem api.Memory, stack []uint64) error{
	"input_length":  readRootField(rootInputLength),
	"input_offset":  readRootField(rootInputOffset),
	"output_length": readRootField(rootOutputLength),
	"output_offset": readRootField(rootOutputOffset),
	"error_get":     readRootField(rootError),
	"input_load_u8": inputLoadU8,
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

// rootFunc is a kernel function done in Go by read. The kernel's own
// function supplies its definition (name, parameter and result types).
type rootFunc struct {
	api.Function
	mem  api.Memory
	read func(api.Memory, []uint64) error
}

// CallWithStack runs the reader over stack, which holds the parameters
// and, after, the result.
func (f *rootFunc) CallWithStack(_ context.Context, stack []uint64) error {
	return f.read(f.mem, stack)
}

// Call runs the reader with params and returns its one result.
func (f *rootFunc) Call(ctx context.Context, params ...uint64) ([]uint64, error) {
	if want := len(f.Definition().ParamTypes()); len(params) != want {
		return nil, fmt.Errorf("%s: %d parameters, want %d", f.Definition().Name(), len(params), want)
	}
	stack := make([]uint64, 1)
	copy(stack, params)
	if err := f.CallWithStack(ctx, stack); err != nil {
		return nil, err
	}
	return stack, nil
}
