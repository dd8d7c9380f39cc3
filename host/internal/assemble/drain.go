package assemble

import (
	"context"
	"errors"
)

// errDraining is what GET /health answers (503) while the host drains.
var errDraining = errors.New("draining: the host is shutting down; send new work to another host")

// drain stops taking new A2A tasks (SendMessage and its kin answer -32106
// draining, and GET /health 503, so a load balancer moves on) and waits,
// until ctx ends, for the tasks still running: their clients keep reading,
// following and canceling them meanwhile. What still runs when ctx ends is
// handed back by Close.
func (h *Root) drain(ctx context.Context) {
	if h.tasks == nil {
		return
	}
	if err := h.tasks.Drain(ctx); err != nil {
		h.log.Warn("shutdown grace over with tasks still running; handing them back", "err", err)
	}
}

// errNotBeating: the store takes no writes from this host (its task lease
// beats fail), though the connection looks up (a half-open link, a lost
// quorum).
var errNotBeating = errors.New("state store: not answering this host (task lease beats fail)")

// ready is GET /health's check: the host is not draining, the state store
// is connected and takes its writes.
// rootReadiness is the root's readiness as httpx sees it (GET /health).
type rootReadiness struct{ h *Root }

// Ready is the root's ready.
func (r rootReadiness) Ready() error { return r.h.ready() }

func (h *Root) ready() error {
	switch {
	case h.tasks != nil && h.tasks.Draining():
		return errDraining
	case h.tasks != nil && !h.tasks.Beating():
		return errNotBeating
	}
	return h.Store.Ready()
}
