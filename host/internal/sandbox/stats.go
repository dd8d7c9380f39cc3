package sandbox

import "sync/atomic"

// Stats are cumulative counters for metrics. InstancesLive and CallsRunning
// are gauges.
type Stats struct {
	Calls              uint64 // calls that reached an instance or the queue
	Failures           uint64 // calls that returned an error
	PoolSaturated      uint64 // calls refused with pool_saturated
	InstancesCreated   uint64 // instances created (warm or fresh)
	InstancesDiscarded uint64 // instances closed after a failure or at Close
	InstancesLive      uint64 // instances currently alive
	InstancesIdle      uint64 // instances alive and free for a call now
	CallsRunning       uint64 // calls holding an instance slot now
	// MemoryPeakBytes is the highest linear memory (plugin plus Extism
	// kernel) an instance reached by the end of a call: the high-water mark
	// that sizes limits.memory.
	MemoryPeakBytes uint64
	// CompileHits and CompileMisses count module compilations served by
	// the on-disk compilation cache and those that compiled and stored a
	// new entry (runtime Stats with a CacheDir only).
	CompileHits, CompileMisses uint64
	// BudgetBytes is the runtime's MaxLiveBytes and ReservedBytes what live
	// instances and running calls hold of it (runtime Stats only).
	BudgetBytes, ReservedBytes uint64
}

// counters are the atomic counters behind Stats. A module's counters
// forward every increment to its runtime's.
type counters struct {
	parent                                    *counters
	calls, failures, saturated, created, gone atomic.Uint64
	running                                   atomic.Int64
	peak                                      atomic.Uint64
}

func (c *counters) each(f func(*counters)) {
	for ; c != nil; c = c.parent {
		f(c)
	}
}

func (c *counters) call()              { c.each(func(c *counters) { c.calls.Add(1) }) }
func (c *counters) failure()           { c.each(func(c *counters) { c.failures.Add(1) }) }
func (c *counters) saturation()        { c.each(func(c *counters) { c.saturated.Add(1) }) }
func (c *counters) instanceCreated()   { c.each(func(c *counters) { c.created.Add(1) }) }
func (c *counters) instanceDiscarded() { c.each(func(c *counters) { c.gone.Add(1) }) }
func (c *counters) slotTaken()         { c.each(func(c *counters) { c.running.Add(1) }) }
func (c *counters) slotFreed()         { c.each(func(c *counters) { c.running.Add(-1) }) }

// notePeak raises the memory high-water mark to n.
func (c *counters) notePeak(n uint64) {
	c.each(func(c *counters) {
		for old := c.peak.Load(); n > old && !c.peak.CompareAndSwap(old, n); old = c.peak.Load() {
		}
	})
}

func (c *counters) snapshot() Stats {
	created, gone := c.created.Load(), c.gone.Load()
	return Stats{
		Calls:              c.calls.Load(),
		Failures:           c.failures.Load(),
		PoolSaturated:      c.saturated.Load(),
		InstancesCreated:   created,
		InstancesDiscarded: gone,
		InstancesLive:      created - min(gone, created),
		CallsRunning:       uint64(max(c.running.Load(), 0)),
		MemoryPeakBytes:    c.peak.Load(),
	}
}
