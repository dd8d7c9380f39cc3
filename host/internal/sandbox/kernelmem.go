package sandbox

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// The kernel's memory layout (extism kernel/src/lib.rs as compiled into
// go-sdk v1.7.1's extism-runtime.wasm v1.7.0). MemoryRoot is a repr(C)
// struct at address 1: initialized (a byte) at 1, then the u64s position
// (of the bump allocator, relative to the first block), length (the bytes
// the allocator may use), error, input_offset, input_length, output_offset,
// output_length; 64 bytes in all. The blocks follow at 65, each a
// MemoryBlock header {status u8, size u32 at +4, used u32 at +8} of 12
// bytes and then its data, so the first block's data is at 77.
const (
	rootInitialized  = 1
	rootPosition     = 9
	rootLength       = 17
	rootError        = 25
	rootInputOffset  = 33
	rootInputLength  = 41
	rootOutputOffset = 49
	rootOutputLength = 57
	// rootEnd is the MemoryRoot's size, the first address load_u8 and
	// store_u8 accept (MemoryRoot::pointer_in_bounds_fast).
	rootEnd = 64
	// firstBlock is the address of the first MemoryBlock.
	firstBlock = 65
	// blockHeader is a MemoryBlock's size; blockSize and blockUsed are its
	// fields' offsets.
	blockHeader = 12
	blockSize   = 4
	blockUsed   = 8
	// The block statuses.
	blockUnused = 0
	blockActive = 1
	blockFree   = 2
	// splitMin is the smallest excess for which alloc splits a free block.
	splitMin = 128
	// initialLength is the allocator's length after initialisation: one
	// page less the MemoryRoot (whatever the memory's size).
	initialLength = wasmPage - rootEnd
	// initialCleared is how many bytes at firstBlock initialisation zeroes
	// (the kernel's write_bytes counts 12 MemoryBlocks of 12 bytes).
	initialCleared = blockHeader * blockHeader
	wasmPage       = 65536
	// walkCheckEvery is how many blocks a walk over the kernel's block list
	// visits between looks at the call's context.
	walkCheckEvery = 1 << 12
)

// kmem is the kernel's memory as bytes, for one kernel function. A load or
// store outside it is where the kernel's code traps: an error here.
type kmem struct {
	mem api.Memory
	b   []byte
}

// kernelMem views the kernel's memory mem.
func kernelMem(mem api.Memory) kmem {
	b, _ := mem.Read(0, mem.Size())
	return kmem{mem: mem, b: b}
}

// kernelTrap is an access outside the kernel's memory, or a walk the
// kernel would never finish: where the kernel's own code traps or spins.
type kernelTrap struct {
	what string
	addr uint64
}

func (e *kernelTrap) Error() string {
	return fmt.Sprintf("extism kernel: %s at %d", e.what, e.addr)
}

func (k *kmem) fits(a, n uint32) bool { return uint64(a)+uint64(n) <= uint64(len(k.b)) }

func (k *kmem) load8(a uint32) (byte, error) {
	if !k.fits(a, 1) {
		return 0, &kernelTrap{"load of a byte outside its memory", uint64(a)}
	}
	return k.b[a], nil
}

func (k *kmem) load32(a uint32) (uint32, error) {
	if !k.fits(a, 4) {
		return 0, &kernelTrap{"load of a u32 outside its memory", uint64(a)}
	}
	return binary.LittleEndian.Uint32(k.b[a:]), nil
}

func (k *kmem) load64(a uint32) (uint64, error) {
	if !k.fits(a, 8) {
		return 0, &kernelTrap{"load of a u64 outside its memory", uint64(a)}
	}
	return binary.LittleEndian.Uint64(k.b[a:]), nil
}

func (k *kmem) store8(a uint32, v byte) error {
	if !k.fits(a, 1) {
		return &kernelTrap{"store of a byte outside its memory", uint64(a)}
	}
	k.b[a] = v
	return nil
}

func (k *kmem) store32(a, v uint32) error {
	if !k.fits(a, 4) {
		return &kernelTrap{"store of a u32 outside its memory", uint64(a)}
	}
	binary.LittleEndian.PutUint32(k.b[a:], v)
	return nil
}

func (k *kmem) store64(a uint32, v uint64) error {
	if !k.fits(a, 8) {
		return &kernelTrap{"store of a u64 outside its memory", uint64(a)}
	}
	binary.LittleEndian.PutUint64(k.b[a:], v)
	return nil
}

// get and set are the MemoryRoot's u64 fields; root has made sure the
// memory holds them (it is a whole number of pages, and not empty).
func (k *kmem) get(field uint32) uint64 { return binary.LittleEndian.Uint64(k.b[field:]) }

func (k *kmem) set(field uint32, v uint64) { binary.LittleEndian.PutUint64(k.b[field:], v) }

// size is the memory's size in bytes.
func (k *kmem) size() uint64 { return uint64(len(k.b)) }

// grow is the kernel's memory.grow by pages; false if the memory cannot
// grow (its maximum, or the sandbox's memory meter).
func (k *kmem) grow(pages uint32) bool {
	if _, ok := k.mem.Grow(pages); !ok {
		return false
	}
	*k = kernelMem(k.mem)
	return true
}

// root is MemoryRoot::new(): on the first use of the kernel (initialized
// is 0) it zeroes the MemoryRoot's offsets, sets length to a page less the
// MemoryRoot and position to 0, and clears the first blocks' headers.
func (k *kmem) root() error {
	if len(k.b) == 0 { // the kernel's memory has 16 pages at least
		return &kernelTrap{"MemoryRoot outside its empty memory", rootInitialized}
	}
	if k.b[rootInitialized] != 0 {
		return nil
	}
	k.b[rootInitialized] = 1
	for _, f := range []uint32{rootInputOffset, rootInputLength, rootOutputOffset, rootOutputLength, rootError} {
		k.set(f, 0)
	}
	k.set(rootLength, initialLength)
	k.set(rootPosition, 0)
	clear(k.b[firstBlock : firstBlock+initialCleared])
	return nil
}

// walk visits the kernel's block list from the first block while a block
// starts below end, as the kernel's free and length do (a block's next is
// its data's end, in 32-bit address arithmetic), and returns the block
// whose data is at p and that is active; ok is false if there is none. A
// list that loops (only a guest overwriting block headers through store_u8
// makes one) ends with an error where the kernel would spin until the
// call's deadline; a walk the context ends stops with its error.
func (k *kmem) walk(ctx context.Context, p uint64) (block uint32, ok bool, err error) {
	end := p + firstBlock
	b := uint32(firstBlock)
	for n := uint64(1); ; n++ {
		st, err := k.load8(b)
		if err != nil {
			return 0, false, err
		}
		if st == blockActive && uint64(b)+blockHeader == p {
			return b, true, nil
		}
		size, err := k.load32(b + blockSize)
		if err != nil {
			return 0, false, err
		}
		b += blockHeader + size
		if uint64(b) >= end {
			return 0, false, nil
		}
		if err := k.walked(ctx, n, b); err != nil {
			return 0, false, err
		}
	}
}

// walked is the check every walk makes after its n-th block: more blocks
// than the memory has bytes means a list that loops.
func (k *kmem) walked(ctx context.Context, n uint64, b uint32) error {
	if n%walkCheckEvery != 0 {
		return nil
	}
	if n > k.size() {
		return &kernelTrap{"block list loops", uint64(b)}
	}
	return ctx.Err()
}
