package store

import (
	"context"
	"time"
)

// Fit says what a written record is charged.
type Fit uint8

// The fits of a record write.
const (
	// Running is work in progress (a task not yet ended, an executing
	// plan): the record keeps the bound it was admitted with.
	Running Fit = iota
	// Settled is a record at rest that may be written again (a plan that
	// ended): charged its size plus a little room for small later writes.
	Settled
	// Final is a record never written again (a terminal task): charged its
	// size.
	Final
)

// pendingMode is what a Pending still has to do once the write is known.
type pendingMode uint8

const (
	keep      pendingMode = iota // the charge does not change
	added                        // next is in the ledger besides prev
	swapAfter                    // prev covers the write; next replaces it once the write landed
)

// ledgerTimeout bounds the ledger writes that follow a record write; they
// run even when the caller's context has ended.
const ledgerTimeout = 10 * time.Second

// Pending is a charge prepared for one record write. Store Charge() with
// the record, write it, then call Finish with the write's error (or Drop
// when the write was never attempted). A Pending is used by one goroutine.
type Pending struct {
	u     *Usage
	owner string
	prev  Charge
	next  Charge
	mode  pendingMode
}

// Charge is the charge to store with the record.
func (p *Pending) Charge() Charge { return p.next }

// Charge prepares the write of a record owner holds with charge prev (the
// one stored with the version being replaced) at size bytes (its key, value
// and RecordOverhead), charged as fit says. A record without a charge stays
// without one. When the charge grows or moves, the new charge is committed
// now, before the write; should that fail (logged), the record keeps prev:
// a write of running work is never refused for its accounting.
func (u *Usage) Charge(ctx context.Context, owner string, prev Charge, size int64, fit Fit) *Pending {
	p := &Pending{u: u, owner: owner, prev: prev, next: prev}
	if prev.IsZero() {
		return p
	}
	now := u.cfg.Now()
	covers := u.covers(prev, size, now)
	switch fit {
	case Running:
		if covers {
			return p
		}
		p.next = Charge{Bytes: max(prev.Bytes, size), Until: u.until(now)}
	case Settled:
		if covers && prev.Bytes <= size+settledRoom {
			return p
		}
		p.next = Charge{Bytes: size + settledRoom, Until: u.until(now)}
	default:
		p.next = Charge{Bytes: size, Until: u.until(now)}
		if p.next == prev {
			return p
		}
		if covers { // prev accounts for the write until the swap
			p.mode = swapAfter
			return p
		}
	}
	err := u.update(ctx, owner, func(l *usageLedger, _ int64) error {
		l.move(prev, p.next)
		return nil
	})
	if err != nil {
		u.st.log.Warn("store: usage not recorded; the record keeps its previous charge", "usage", u.cfg.Name, "err", err)
		p.next = prev
		return p
	}
	p.mode = added
	return p
}

// Finish completes the charge after the record write returned err: on
// success the replaced charge is removed, when the write certainly did not
// land (Refused) the prepared one is; when its outcome is unknown both stay
// (an over-count until they expire). Ledger failures are logged.
func (p *Pending) Finish(ctx context.Context, err error) {
	switch {
	case p == nil || p.mode == keep:
	case err == nil:
		p.stored(ctx)
	case Refused(err):
		p.Drop(ctx)
	}
}

// Drop undoes the charge of a write that was not made.
func (p *Pending) Drop(ctx context.Context) {
	if p == nil || p.mode != added {
		return
	}
	p.apply(ctx, func(l *usageLedger) { l.unmove(p.prev, p.next) })
	p.mode = keep
}

func (p *Pending) stored(ctx context.Context) {
	switch p.mode {
	case added:
		if !p.prev.IsZero() {
			p.apply(ctx, func(l *usageLedger) { l.settle(p.prev, p.next) })
		}
	case swapAfter:
		p.apply(ctx, func(l *usageLedger) {
			l.add(p.prev, -1)
			l.add(p.next, 1)
		})
	}
	p.mode = keep
}

func (p *Pending) apply(ctx context.Context, fn func(l *usageLedger)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerTimeout)
	defer cancel()
	err := p.u.update(ctx, p.owner, func(l *usageLedger, _ int64) error {
		fn(l)
		return nil
	})
	if err != nil {
		p.u.st.log.Warn("store: usage ledger not updated; it over-counts until the charge expires",
			"usage", p.u.cfg.Name, "bytes", p.prev.Bytes, "err", err)
	}
}
