package sandbox

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// meter is the experimental.MemoryAllocator of one instance. It backs every
// linear memory the instance creates (the plugin's and Extism's kernel),
// refuses growth of any of them past budget, and records each refusal:
// wazero gives the host no other signal that a guest hit its memory cap
// (memory.grow just returns -1 and the guest usually traps).
//
// Why not wazero's own limit? wazero checks its page limit before asking the
// allocator, so growth refused by that limit is invisible to the host. The
// wazero limit is therefore set to the wasm32 maximum and the budget is
// enforced here, where the refusal can be observed.
type meter struct {
	budget uint64

	mu       sync.Mutex
	mems     []*linearMemory
	refusals uint64
	peak     uint64
}

var _ experimental.MemoryAllocator = (*meter)(nil)

func newMeter(budget uint64) *meter { return &meter{budget: budget} }

// Allocate implements experimental.MemoryAllocator.
func (m *meter) Allocate(capacity, maxBytes uint64) experimental.LinearMemory {
	lm := &linearMemory{m: m, max: min(maxBytes, m.budget), initialCap: min(capacity, m.budget)}
	m.mu.Lock()
	m.mems = append(m.mems, lm)
	m.mu.Unlock()
	return lm
}

// Refusals is the number of growth requests refused so far.
func (m *meter) Refusals() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refusals
}

// Peak is the high-water mark of the instance's linear memory, in bytes
// summed over its memories.
func (m *meter) Peak() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}

// linearMemory is one Go-allocated linear memory of an instance.
type linearMemory struct {
	m          *meter
	max        uint64
	initialCap uint64
	buf        []byte
}

// Reallocate implements experimental.LinearMemory. The first call sizes the
// declared minimum, which Load has already checked against the budget.
func (l *linearMemory) Reallocate(size uint64) []byte {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	first := l.buf == nil
	if !first && size > l.max {
		l.m.refusals++
		return nil
	}
	switch {
	case size <= uint64(cap(l.buf)):
		l.buf = l.buf[:size]
	default:
		// Grow with headroom (doubling, within the budget) so a guest that
		// grows page by page does not copy its memory on every step.
		newCap := max(size, min(2*uint64(cap(l.buf)), l.max))
		if first {
			newCap = max(size, l.initialCap)
		}
		nb := make([]byte, size, newCap)
		copy(nb, l.buf)
		l.buf = nb
	}
	var total uint64
	for _, mem := range l.m.mems {
		total += uint64(len(mem.buf))
	}
	l.m.peak = max(l.m.peak, total)
	return l.buf
}

// Free implements experimental.LinearMemory.
func (l *linearMemory) Free() {
	l.m.mu.Lock()
	l.buf = nil
	l.m.mu.Unlock()
}
