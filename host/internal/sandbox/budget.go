package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// ErrOverBudget is wrapped by a Load error for a module one instance of
// which (with a call running on it) could need more host memory than the
// runtime's whole budget (RuntimeConfig.MaxLiveBytes).
var ErrOverBudget = errors.New("module exceeds the host's sandbox memory budget")

// What an instance costs the host outside its linear memories, measured on
// wazero v1.12 / Extism go-sdk v1.7.1 (heap in use per extra instance) and
// rounded up: ~1 MiB for an empty module (Extism's kernel instance, WASI,
// wazero's module instance), ~100 B per global (2 million globals cost
// ~330 MB an instance before the shape limits), ~10 B per function, ~56 B
// per element item, ~32 B per data segment.
const (
	instanceBaseBytes  = 2 << 20
	globalBytes        = 160
	functionBytes      = 16
	elementItemBytes   = 64
	dataSegmentBytes   = 48
	linearMemories     = 2 // the plugin's and Extism's kernel memory, each capped at MemoryBytes
	stackCeilingBytes  = 50_000_000
	frameSlotBytes     = 16
	stackOverheadBytes = 64 << 10
)

// instanceCost is the most host memory one instance of a module can hold
// while idle: its linear memories at their cap, its tables at their
// effective maximums (8 bytes an entry), and what wazero allocates for its
// globals, functions, element items and data segments.
func instanceCost(info ModuleInfo, limits Limits, tableMaxes []uint32) uint64 {
	cost := uint64(instanceBaseBytes) + linearMemories*limits.MemoryBytes
	for _, m := range tableMaxes {
		cost += uint64(m) * tableEntryBytes
	}
	s := info.Shape
	cost += uint64(s.Globals)*globalBytes + uint64(s.Functions)*functionBytes +
		uint64(s.ElementItems)*elementItemBytes + uint64(s.DataSegments)*dataSegmentBytes
	return cost
}

// stackCost is the most host memory one call can hold in wazero's call
// stack. wazero (v1.12, internal/engine/wazevo/call_engine.go) keeps a
// call's stack in a Go []byte that it doubles (2*len + the frame being
// entered) while its length is at most 50,000,000 bytes, and fails with
// "stack overflow" past that; no supported API lowers that ceiling. The
// last stack is at most 100 MB plus a frame, and the stacks it outgrew are
// garbage the Go collector may not have reclaimed yet: together at most as
// large again. A frame is bounded by its parameters and locals plus the
// temporaries of its code (spill slots of up to 16 bytes each). Measured:
// one call recursing to the ceiling with 100 values live per frame
// (testdata/stack_hog.wat) raised the process's peak RSS by ~180 MB.
func stackCost(info ModuleInfo) uint64 {
	frame := uint64(frameSlotBytes) * (uint64(info.Shape.MaxFrameSlots) + 2*uint64(info.Shape.MaxBodyBytes))
	return 4*stackCeilingBytes + 2*frame + stackOverheadBytes
}

// EstimateCost is what Load would count against a runtime's budget for a
// module Inspect described as info, under limits (zero fields take
// DefaultLimits). It fails as Load would on invalid limits or tables.
func EstimateCost(info ModuleInfo, limits Limits) (Cost, error) {
	limits, err := limits.normalized()
	if err != nil {
		return Cost{}, err
	}
	maxes, err := tableLimits(info.Tables, limits.MemoryBytes)
	if err != nil {
		return Cost{}, err
	}
	return Cost{Instance: instanceCost(info, limits, maxes), Call: stackCost(info)}, nil
}

// budget is the runtime-wide cap on what live instances and running calls
// may hold: an instance reserves its instanceCost while it lives, a call
// its stackCost while it runs.
type budget struct {
	total uint64
	sem   *semaphore.Weighted
	used  atomic.Int64
}

func newBudget(total uint64) *budget {
	return &budget{total: total, sem: semaphore.NewWeighted(int64(total))}
}

// reserve takes n bytes, waiting until ctx ends. It reports false when the
// bytes could not be had in time.
func (b *budget) reserve(ctx context.Context, n uint64) bool {
	if n > b.total {
		return false
	}
	if b.sem.TryAcquire(int64(n)) || ctx.Err() == nil && b.sem.Acquire(ctx, int64(n)) == nil {
		b.used.Add(int64(n))
		return true
	}
	return false
}

// reserveWithin is reserve waiting at most d past what is free now: the
// timer of that wait is made only when the bytes are not free at once (the
// common case of a call on a warm instance pays for no timer).
func (b *budget) reserveWithin(ctx context.Context, n uint64, d time.Duration) bool {
	if n <= b.total && b.sem.TryAcquire(int64(n)) {
		b.used.Add(int64(n))
		return true
	}
	wait, stop := context.WithTimeout(ctx, d)
	defer stop()
	return b.reserve(wait, n)
}

// tryReserve takes n bytes if they are free now and keep more bytes would
// still be free afterwards (warm instances leave room for a call to run).
func (b *budget) tryReserve(n, keep uint64) bool {
	if n+keep > b.total-min(b.total, uint64(max(0, b.used.Load()))) || !b.sem.TryAcquire(int64(n)) {
		return false
	}
	b.used.Add(int64(n))
	return true
}

// release returns n bytes.
func (b *budget) release(n uint64) {
	b.used.Add(-int64(n))
	b.sem.Release(int64(n))
}

// checkFits refuses a module whose one instance, with a call on it, could
// never fit in the budget.
func (b *budget) checkFits(inst, stack uint64, limits Limits) error {
	if inst+stack <= b.total {
		return nil
	}
	return fmt.Errorf("%w: one instance may hold %s (linear memories %d × %s, tables, globals and functions) plus %s of call stack while it runs, "+
		"over the budget of %s (sandbox.max_live_bytes)", ErrOverBudget, formatMiB(inst), linearMemories, formatBytes(limits.MemoryBytes),
		formatMiB(stack), formatMiB(b.total))
}

// formatMiB renders n in MiB with one decimal.
func formatMiB(n uint64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
