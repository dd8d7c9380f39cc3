package sandbox

import (
	"context"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// janitor is the runtime's one background goroutine that keeps modules
// lean: it wakes when the next idle instance or idle code expires (never on
// a fixed tick), closes idle instances past their module's IdleTimeout down
// to MinInstances, releases the code of modules left with no instance and
// no call for IdleTimeout, creates the MinInstances a module lacks, keeps
// the resident code within MaxCodeBytes, and, once calls are quiet after
// something was released, runs the Go collector and returns the freed
// memory to the OS (wazero unmaps machine code in a finalizer, so until a
// collection it stays mapped; and Go's scavenger would return the freed
// instances' memory only slowly).
type janitor struct {
	rt   *Runtime
	kick chan struct{}
	quit chan struct{}
	done chan struct{}
	gc   atomic.Bool // a collection is wanted (code was released)

	at    atomic.Int64 // when the next sweep is due (unix ns); 0: none
	mu    sync.Mutex   // guards timer resets
	timer *time.Timer
}

// minGCInterval spaces the collections janitors run (one process may
// hold many runtimes, and releases come in bursts); quietBeforeGC is how
// long no call may have ended before one.
const (
	minGCInterval = time.Second
	quietBeforeGC = time.Second
)

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// lastGC is when a janitor last ran the collector (unix ns).
var lastGC atomic.Int64

func startJanitor(rt *Runtime) *janitor {
	j := &janitor{rt: rt, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		timer: time.NewTimer(time.Hour)}
	j.timer.Stop()
	go j.run()
	return j
}

func (j *janitor) stop() {
	close(j.quit)
	<-j.done
}

func (j *janitor) run() {
	defer close(j.done)
	for {
		select {
		case <-j.quit:
			return
		case <-j.timer.C:
		case <-j.kick:
		}
		j.mu.Lock()
		j.at.Store(0)
		j.mu.Unlock()
		now := time.Now()
		next := j.rt.sweep(j.rt.bg, now)
		if j.gc.Load() {
			// Collect once calls have been quiet for a while: under traffic
			// the collector runs on its own (compiles allocate), and a
			// forced collection would only slow the calls.
			last, active := time.Unix(0, lastGC.Load()), time.Unix(0, j.rt.lastActive.Load())
			if at := later(last.Add(minGCInterval), active.Add(quietBeforeGC)); now.Before(at) {
				if next.IsZero() || at.Before(next) {
					next = at
				}
			} else {
				j.gc.Store(false)
				debug.FreeOSMemory() // a collection, and the freed pages back to the OS now
				lastGC.Store(time.Now().UnixNano())
			}
		}
		if !next.IsZero() {
			j.rt.wake(next)
		}
	}
}

// wake makes the janitor sweep no later than at. It is cheap when a sweep
// is already due earlier (every call's return asks for one).
func (rt *Runtime) wake(at time.Time) {
	j, ns := rt.jan, at.UnixNano()
	if cur := j.at.Load(); cur != 0 && cur <= ns {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if cur := j.at.Load(); cur != 0 && cur <= ns {
		return
	}
	j.at.Store(ns)
	if d := time.Until(at); d > 0 {
		j.timer.Reset(d)
		return
	}
	j.timer.Stop()
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// collectSoon asks the janitor for a Go collection (code was released).
func (rt *Runtime) collectSoon() {
	rt.jan.gc.Store(true)
	rt.wake(time.Now())
}

// sweep applies the idle rules to every module and returns when the next
// sweep is due (zero: nothing can expire).
func (rt *Runtime) sweep(ctx context.Context, now time.Time) time.Time {
	rt.mu.Lock()
	mods := make([]*Module, 0, len(rt.modules))
	for m := range rt.modules {
		mods = append(mods, m)
	}
	rt.mu.Unlock()
	var next time.Time
	for _, m := range mods {
		if at := m.sweep(ctx, now); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	rt.enforceCodeBudget(ctx, nil) // code that was busy when it went over may be idle now
	return next
}

// sweep closes m's expired idle instances, releases its expired code and
// tops up its MinInstances; it returns when m next needs a sweep.
func (m *Module) sweep(ctx context.Context, now time.Time) time.Time {
	idle := m.limits.IdleTimeout
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return time.Time{}
	}
	var drop []*instance
	// idle is a stack (the last returned is reused first), so the oldest
	// instances are at the bottom.
	for len(m.idle) > 0 && m.live > m.limits.MinInstances && now.Sub(m.idle[0].lastUsed) >= idle {
		drop = append(drop, m.idle[0])
		m.idle[0] = nil // the backing array must not keep it
		m.idle = m.idle[1:]
		m.live--
	}
	var next time.Time
	if len(m.idle) > 0 && m.live > m.limits.MinInstances {
		next = m.idle[0].lastUsed.Add(idle)
	}
	var dropCode *code
	if m.code != nil && m.releasableLocked() {
		last := time.Unix(0, m.lastUsed.Load())
		if now.Sub(last) >= idle {
			_, dropCode = m.takeAllLocked()
		} else if at := last.Add(idle); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	missing := 0
	if m.checkErr == nil && m.limits.MinInstances > m.live {
		missing = m.limits.MinInstances - m.live
		if m.code == nil && m.op == nil {
			m.startCompile(false, false)
			missing = 0 // created when the code is in
		}
	}
	m.mu.Unlock()
	m.free(ctx, drop, dropCode)
	if missing > 0 && !m.topUp(ctx, missing) {
		retry := now.Add(time.Second) // no room in the budget now
		if next.IsZero() || retry.Before(next) {
			next = retry
		}
	}
	return next
}

// releasableLocked reports whether m's code may be released now (m.mu
// held): no instance, no call creating one, no compile, no MinInstances.
func (m *Module) releasableLocked() bool {
	return m.live == 0 && m.pins == 0 && m.op == nil && m.limits.MinInstances == 0
}

// topUp creates up to n instances for MinInstances, while the budget has
// room; it reports whether it created them all.
func (m *Module) topUp(ctx context.Context, n int) bool {
	for range n {
		c, ferr := m.pinResident()
		if ferr {
			return true // the code is not in (yet): the compile's end wakes the sweeper
		}
		if !m.rt.budget.tryReserve(m.cost.Instance, m.cost.Call) {
			m.unpin(false)
			return false
		}
		ictx, cancel := context.WithTimeout(ctx, m.limits.Timeout)
		inst, err := m.newInstance(ictx, c)
		cancel()
		if err != nil {
			m.unpin(false)
			m.logger.Warn("sandbox: creating a min instance failed", "plugin", m.name, "error", err)
			return false
		}
		inst.lastUsed = time.Now()
		m.mu.Lock()
		if m.closed { // Close waits for the pin: the instance goes first
			m.mu.Unlock()
			inst.close(ctx)
			m.stats.instanceDiscarded()
			m.unpin(false)
			return true
		}
		m.pins--
		m.live++
		m.idle = append(m.idle, inst)
		m.mu.Unlock()
	}
	return true
}

// pinResident pins the code if it is resident, without compiling; gone
// reports that it is not.
func (m *Module) pinResident() (c *code, gone bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.code == nil || m.closed {
		return nil, true
	}
	m.pins++
	return m.code, false
}

// addResident counts m's code against MaxCodeBytes.
func (rt *Runtime) addResident(m *Module, n uint64) {
	rt.codeMu.Lock()
	rt.resident[m] = n
	rt.codeBytes += n
	rt.codeMu.Unlock()
}

// removeResident stops counting m's code.
func (rt *Runtime) removeResident(m *Module, n uint64) {
	rt.codeMu.Lock()
	if _, ok := rt.resident[m]; ok {
		delete(rt.resident, m)
		rt.codeBytes -= n
	}
	rt.codeMu.Unlock()
}

// enforceCodeBudget releases the code of the least recently used modules
// that can give it up, until the resident code fits MaxCodeBytes (or none
// can; nothing without a bound). except, the module whose code just came
// in, goes last.
func (rt *Runtime) enforceCodeBudget(ctx context.Context, except *Module) {
	rt.codeMu.Lock()
	if rt.maxCode == 0 || rt.codeBytes <= rt.maxCode { // 0: no bound
		rt.codeMu.Unlock()
		return
	}
	cands := make([]*Module, 0, len(rt.resident))
	for m := range rt.resident {
		if m != except {
			cands = append(cands, m)
		}
	}
	rt.codeMu.Unlock()
	slices.SortFunc(cands, func(a, b *Module) int {
		x, y := a.useSeq.Load(), b.useSeq.Load()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	for _, m := range cands {
		rt.codeMu.Lock()
		over := rt.codeBytes > rt.maxCode
		rt.codeMu.Unlock()
		if !over {
			return
		}
		m.evict(ctx)
	}
}

// evict releases m's code and idle instances when no call runs on it and
// it keeps no MinInstances.
func (m *Module) evict(ctx context.Context) {
	m.mu.Lock()
	if m.closed || m.code == nil || m.limits.MinInstances > 0 || m.pins > 0 || m.op != nil || m.live != len(m.idle) {
		m.mu.Unlock()
		return
	}
	drop, c := m.takeAllLocked()
	m.mu.Unlock()
	m.stats.codeEvicted()
	m.free(ctx, drop, c)
}
