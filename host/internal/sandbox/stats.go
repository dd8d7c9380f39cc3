package sandbox

import (
	"sync/atomic"
	"time"
)

// Stats are cumulative counters for metrics. InstancesLive and CallsRunning
// are gauges.
type Stats struct {
	Calls         uint64 // calls that reached an instance or the queue
	Failures      uint64 // calls that returned an error
	PoolSaturated uint64 // calls refused with pool_saturated
	// InstancesCreated counts instances created for the pool: for calls,
	// MinInstances, and a load check's instance kept for a first call (a
	// background check's instance, closed at once, is not counted).
	InstancesCreated   uint64
	InstancesDiscarded uint64 // instances closed after a failure or at Close
	// InstancesReleased are instances closed because they were idle: past
	// IdleTimeout, or with their code under the MaxCodeBytes bound.
	InstancesReleased uint64
	InstancesLive     uint64 // instances currently alive
	InstancesIdle     uint64 // instances alive and free for a call now
	CallsRunning      uint64 // calls holding an instance slot now
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
	// CodeBytes estimates the compiled code resident now and CodeModules
	// counts the modules holding it (for a module: its own, 0 or 1);
	// CodeBudgetBytes is MaxCodeBytes, 0 for no bound (runtime Stats only).
	CodeBytes, CodeModules, CodeBudgetBytes uint64
	// CodeLoads counts compiles (load checks and code loaded again after
	// a release), CodeReleases the code released (idle, over
	// MaxCodeBytes, unloaded) and CodeEvictions those of them forced by
	// MaxCodeBytes.
	CodeLoads, CodeReleases, CodeEvictions uint64
	// Compiling counts modules compiling now or waiting to (for a module:
	// 0 or 1); CompilesRunning those holding one of the CompileWorkers and
	// CompilesQueued those waiting for one (runtime Stats only).
	Compiling, CompilesRunning, CompilesQueued uint64
	CompileWorkers                             int       // RuntimeConfig.CompileWorkers (runtime Stats only)
	LastUsed                                   time.Time // the end of the module's last call (module Stats only)
}

// counters are the atomic counters behind Stats. A module's counters
// forward every increment to its runtime's.
type counters struct {
	parent                                              *counters
	calls, failures, saturated, created, gone, released atomic.Uint64
	codeLoads, codeReleases, codeEvictions              atomic.Uint64
	running                                             atomic.Int64
	peak                                                atomic.Uint64
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
func (c *counters) instanceReleased()  { c.each(func(c *counters) { c.released.Add(1) }) }

// instanceUncounted takes back the creation of an instance that never
// joined the pool (a background load check's).
func (c *counters) instanceUncounted() { c.each(func(c *counters) { c.created.Add(^uint64(0)) }) }
func (c *counters) codeLoaded()        { c.each(func(c *counters) { c.codeLoads.Add(1) }) }
func (c *counters) codeReleased()      { c.each(func(c *counters) { c.codeReleases.Add(1) }) }
func (c *counters) codeEvicted()       { c.each(func(c *counters) { c.codeEvictions.Add(1) }) }
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
	created, gone, released := c.created.Load(), c.gone.Load(), c.released.Load()
	return Stats{
		Calls:              c.calls.Load(),
		Failures:           c.failures.Load(),
		PoolSaturated:      c.saturated.Load(),
		InstancesCreated:   created,
		InstancesDiscarded: gone,
		InstancesReleased:  released,
		InstancesLive:      created - min(gone+released, created),
		CallsRunning:       uint64(max(c.running.Load(), 0)),
		MemoryPeakBytes:    c.peak.Load(),
		CodeLoads:          c.codeLoads.Load(),
		CodeReleases:       c.codeReleases.Load(),
		CodeEvictions:      c.codeEvictions.Load(),
	}
}
