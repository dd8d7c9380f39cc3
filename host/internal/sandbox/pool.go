package sandbox

import (
	"context"
	"time"
)

// takeIdle returns the idle instance used last, or nil.
func (m *Module) takeIdle() *instance {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.idle)
	if n == 0 {
		return nil
	}
	inst := m.idle[n-1]
	m.idle[n-1] = nil
	m.idle = m.idle[:n-1]
	return inst
}

// putBack returns a healthy instance to the pool, on top (the pool reuses
// its most recent instances, so surplus ones age out after IdleTimeout), or
// discards it. A discarded instance is replaced by the next call that finds
// no idle one (or by the sweeper, for MinInstances).
func (m *Module) putBack(ctx context.Context, inst *instance, keep bool, now time.Time) {
	m.touch(now)
	if keep {
		m.mu.Lock()
		if !m.closed {
			inst.lastUsed = now
			m.idle = append(m.idle, inst)
			m.mu.Unlock()
			m.rt.wake(now.Add(m.limits.IdleTimeout))
			return
		}
		m.mu.Unlock()
	}
	m.discard(ctx, inst)
}

// touch records a use of m now.
func (m *Module) touch(now time.Time) {
	m.lastUsed.Store(now.UnixNano())
	m.rt.lastActive.Store(now.UnixNano())
	m.useSeq.Store(m.rt.useSeq.Add(1))
}

// discard closes an instance that may not serve again (or whose module is
// closing).
func (m *Module) discard(ctx context.Context, inst *instance) {
	inst.close(ctx)
	m.stats.instanceDiscarded()
	m.mu.Lock()
	m.live--
	below := !m.closed && m.live < m.limits.MinInstances
	m.mu.Unlock()
	if below {
		m.rt.wake(time.Now())
	}
}

func (m *Module) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}
