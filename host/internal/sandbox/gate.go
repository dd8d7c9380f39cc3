package sandbox

import (
	"context"
	"sync"
)

// gate bounds how many modules compile at once (RuntimeConfig.
// CompileWorkers). Waiters are served in order, those a call waits for
// (urgent) before the background ones, so a call to a plugin queued behind
// a hundred start-up compiles does not wait for them.
type gate struct {
	mu         sync.Mutex
	slots      int
	free       int
	held       int // background waiters wait while > 0 (hold)
	urgent     []*ticket
	background []*ticket
}

// ticket is one compile's place in the gate.
type ticket struct {
	ch      chan struct{} // closed when the slot is granted
	urgent  bool
	queued  bool // in one of the gate's queues
	granted bool
}

func newGate(slots int) *gate { return &gate{slots: max(1, slots), free: max(1, slots)} }

func newTicket(urgent bool) *ticket { return &ticket{ch: make(chan struct{}), urgent: urgent} }

// acquire waits for a slot for t until ctx ends.
func (g *gate) acquire(ctx context.Context, t *ticket) error {
	g.mu.Lock()
	if g.free > 0 && len(g.urgent) == 0 && (t.urgent || len(g.background) == 0 && g.held == 0) {
		g.free--
		t.granted = true
		g.mu.Unlock()
		return nil
	}
	t.queued = true
	if t.urgent {
		g.urgent = append(g.urgent, t)
	} else {
		g.background = append(g.background, t)
	}
	g.mu.Unlock()
	select {
	case <-t.ch:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		if t.granted { // granted while ctx ended: hand the slot on
			g.releaseLocked()
			return ctx.Err()
		}
		g.urgent, g.background = without(g.urgent, t), without(g.background, t)
		t.queued = false
		return ctx.Err()
	}
}

// promote makes a background ticket urgent (a call now waits for its
// compile), moving it ahead of every background one if it waits already.
func (g *gate) promote(t *ticket) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.urgent || t.granted {
		return
	}
	t.urgent = true
	if t.queued {
		g.background = without(g.background, t)
		g.urgent = append(g.urgent, t)
		g.grantLocked() // a held background waiter may go now
	}
}

// release gives a slot back, to the first urgent waiter, else the first
// background one.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

func (g *gate) releaseLocked() {
	g.free++
	g.grantLocked()
}

// grantLocked hands free slots to waiters: urgent ones first, background
// ones unless held.
func (g *gate) grantLocked() {
	for g.free > 0 {
		var next *ticket
		switch {
		case len(g.urgent) > 0:
			next, g.urgent = g.urgent[0], g.urgent[1:]
		case len(g.background) > 0 && g.held == 0:
			next, g.background = g.background[0], g.background[1:]
		default:
			return
		}
		g.free--
		next.granted, next.queued = true, false
		close(next.ch)
	}
}

// hold keeps background compiles waiting until the returned resume is
// called (urgent ones go on).
func (g *gate) hold() (resume func()) {
	g.mu.Lock()
	g.held++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.held--
			g.grantLocked()
		})
	}
}

// running counts the slots taken.
func (g *gate) running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.slots - g.free
}

// waiting counts the compiles queued for a slot.
func (g *gate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.urgent) + len(g.background)
}

func without(ts []*ticket, t *ticket) []*ticket {
	for i, x := range ts {
		if x == t {
			return append(ts[:i:i], ts[i+1:]...)
		}
	}
	return ts
}
