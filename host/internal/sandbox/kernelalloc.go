package sandbox

import "context"

// The Extism kernel's allocator and the MemoryRoot's setters, in Go, on the
// kernel's memory (see kernelgo.go for why, kernelmem.go for the layout).
// Each does what the kernel embedded in go-sdk v1.7.1 does, byte for byte
// and in the same order (TestKernelInGoMatchesKernel runs both on the same
// sequences and compares the whole memory), including its arithmetic: a
// block's size and address are 32-bit, the MemoryRoot's fields 64-bit,
// both wrap. Where the kernel's code traps (an access outside its memory)
// these fail; their writes before that stay, as the kernel's do.

// kAlloc is the kernel's alloc: a block of n bytes, 0 for n = 0 or when the
// memory cannot grow. A block is taken from the list (the first unused one,
// or the first free one large enough, split when 128 bytes or more would be
// left over) only when the bump allocator has no room left; else it is
// bumped, growing the memory by the pages the shortfall needs.
func kAlloc(ctx context.Context, k *kmem, n uint64) (uint64, error) {
	if n == 0 {
		return 0, nil
	}
	if err := k.root(); err != nil {
		return 0, err
	}
	b, err := k.allocBlock(ctx, n)
	if err != nil || b == 0 {
		return 0, err
	}
	return uint64(b + blockHeader), nil
}

// allocBlock is MemoryRoot::alloc: the address of the block's header.
func (k *kmem) allocBlock(ctx context.Context, n uint64) (uint32, error) {
	length, pos := k.get(rootLength), k.get(rootPosition)
	need := n + blockHeader
	left := length - pos - rootEnd
	if need < left {
		return k.bump(pos, n, need)
	}
	// Out of room: look for a block to reuse, when one could be large
	// enough and there are blocks at all.
	if end := pos + firstBlock; need <= pos && end > firstBlock {
		b, ok, err := k.reuse(ctx, uint32(n), end)
		if err != nil || ok {
			return b, err
		}
	}
	short := need - left
	pages := uint32(short>>16) + b2u32(short&(wasmPage-1) != 0)
	if !k.grow(pages) {
		return 0, nil
	}
	k.set(rootLength, k.get(rootLength)+uint64(pages)<<16)
	return k.bump(pos, n, need)
}

// bump makes a block of n bytes at the allocator's position pos.
func (k *kmem) bump(pos, n, need uint64) (uint32, error) {
	k.set(rootPosition, k.get(rootPosition)+need)
	b := uint32(pos) + firstBlock
	if err := k.store32(b+blockUsed, uint32(n)); err != nil {
		return 0, err
	}
	if err := k.store32(b+blockSize, uint32(n)); err != nil {
		return 0, err
	}
	return b, k.store8(b, blockActive)
}

// reuse walks the blocks below end for the first unused block, or the
// first free one of at least n bytes (split if it has 128 bytes or more
// over: its tail becomes the block), and marks it active with n bytes used.
func (k *kmem) reuse(ctx context.Context, n uint32, end uint64) (uint32, bool, error) {
	b := uint32(firstBlock)
	for i := uint64(1); ; i++ {
		st, err := k.load8(b)
		if err != nil {
			return 0, false, err
		}
		if st == blockUnused {
			return b, true, k.take(b, n)
		}
		size, err := k.load32(b + blockSize)
		if err != nil {
			return 0, false, err
		}
		if st == blockFree && size >= n {
			if over := size - n; over >= splitMin {
				if b, err = k.split(b, over, n); err != nil {
					return 0, false, err
				}
			}
			return b, true, k.take(b, n)
		}
		b += size + blockHeader
		if end <= uint64(b) {
			return 0, false, nil
		}
		if err := k.walked(ctx, i, b); err != nil {
			return 0, false, err
		}
	}
}

// split shrinks the free block b by n bytes and a header, over being its
// size less n, and makes its last n bytes a free block of their own, which
// it returns.
func (k *kmem) split(b, over, n uint32) (uint32, error) {
	if err := k.store32(b+blockUsed, 0); err != nil {
		return 0, err
	}
	if err := k.store32(b+blockSize, over-blockHeader); err != nil {
		return 0, err
	}
	tail := b + over
	if err := k.store32(tail+blockUsed, 0); err != nil {
		return 0, err
	}
	if err := k.store32(tail+blockSize, n); err != nil {
		return 0, err
	}
	return tail, k.store8(tail, blockFree)
}

// take marks block b active with n bytes used.
func (k *kmem) take(b, n uint32) error {
	if err := k.store8(b, blockActive); err != nil {
		return err
	}
	return k.store32(b+blockUsed, n)
}

// listed reports whether p is a pointer free and length look up in the
// block list (MemoryRoot::find_block's bounds check).
func (k *kmem) listed(p uint64) bool { return p >= rootEnd && p <= k.size() }

// kFree is the kernel's free: the active block whose data is at p becomes
// free; freeing the input sets the input's length to 0. Any other p is
// ignored.
func kFree(ctx context.Context, k *kmem, p uint64) error {
	if p == 0 {
		return nil
	}
	if err := k.root(); err != nil {
		return err
	}
	if !k.listed(p) {
		return nil
	}
	b, ok, err := k.walk(ctx, p)
	if err != nil || !ok {
		return err
	}
	k.b[b] = blockFree // walk read it
	if k.get(rootInputOffset) == p {
		k.set(rootInputLength, 0)
	}
	return nil
}

// kLength is the kernel's length: the bytes used of the active block whose
// data is at p, 0 if there is none.
func kLength(ctx context.Context, k *kmem, p uint64) (uint64, error) {
	if p == 0 {
		return 0, nil
	}
	if err := k.root(); err != nil {
		return 0, err
	}
	if !k.listed(p) {
		return 0, nil
	}
	b, ok, err := k.walk(ctx, p)
	if err != nil || !ok {
		return 0, err
	}
	used, err := k.load32(b + blockUsed)
	return uint64(used), err
}

// kLengthUnsafe is the kernel's length_unsafe: the bytes used of the block
// whose header is just before p, if that header says active; 0 otherwise.
// It trusts p (no walk) and leaves the MemoryRoot alone.
func kLengthUnsafe(k *kmem, p uint64) (uint64, error) {
	if p == 0 || !k.listed(p) {
		return 0, nil
	}
	b := uint32(p) - blockHeader
	st, err := k.load8(b)
	if err != nil || st != blockActive {
		return 0, err
	}
	used, err := k.load32(b + blockUsed)
	return uint64(used), err
}

// kReset is the kernel's reset: position 0, the blocks up to the old
// position zeroed, no error, input or output.
func kReset(k *kmem) error {
	if err := k.root(); err != nil {
		return err
	}
	n := uint32(k.get(rootPosition))
	k.set(rootPosition, 0)
	if err := k.zero(firstBlock, n); err != nil {
		return err
	}
	for _, f := range []uint32{rootError, rootOutputLength, rootOutputOffset, rootInputLength, rootInputOffset} {
		k.set(f, 0)
	}
	return nil
}

// zero is the kernel's memset(dst, 0, n), forward, in its pieces: fewer
// than 16 bytes one by one; else bytes up to a 4-byte boundary, 4-byte
// words (none when their count is negative as an i32), the rest one by
// one. It fails at its first store outside the memory, the ones before it
// done (the memory's size is a multiple of 4).
func (k *kmem) zero(dst, n uint32) error {
	if n < 16 {
		return k.zeroBytes(dst, n)
	}
	head := -dst & 3
	if err := k.zeroBytes(dst, head); err != nil {
		return err
	}
	rest := n - head
	words := rest &^ 3
	at := dst + head
	if int32(words) >= 1 {
		end := uint64(at) + uint64(words)
		if end > k.size() {
			clear(k.b[min(uint64(at), k.size()):])
			return &kernelTrap{"store of a u32 outside its memory", max(uint64(at), k.size())}
		}
		clear(k.b[at:end])
	}
	return k.zeroBytes(at+words, rest&3)
}

// zeroBytes zeroes n bytes from dst, one by one.
func (k *kmem) zeroBytes(dst, n uint32) error {
	for i := range n {
		if err := k.store8(dst+i, 0); err != nil {
			return err
		}
	}
	return nil
}

// kSetRange is the kernel's input_set (offset, length are rootInputOffset,
// rootInputLength) and output_set (the output's): the range of length n at
// p, when p and its last byte lie in the allocator's bytes (n = 0 never
// does); else nothing.
func kSetRange(k *kmem, offset, length uint32, p, n uint64) error {
	if err := k.root(); err != nil {
		return err
	}
	if p < firstBlock || k.get(rootLength)+firstBlock <= p {
		return nil
	}
	if last := p + n - 1; last < firstBlock || last >= k.get(rootLength)+firstBlock {
		return nil
	}
	k.set(offset, p)
	k.set(length, n)
	return nil
}

// kErrorSet is the kernel's error_set: the error's offset p, when p is 0
// or lies in the allocator's bytes; else nothing.
func kErrorSet(k *kmem, p uint64) error {
	if err := k.root(); err != nil {
		return err
	}
	if p != 0 && (p <= rootEnd || k.get(rootLength)+firstBlock <= p) {
		return nil
	}
	k.set(rootError, p)
	return nil
}

func b2u32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
