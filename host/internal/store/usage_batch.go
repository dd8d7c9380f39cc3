package store

import (
	"context"
	"sync"
)

// One owner's ledger is one KV record, so every admission and charge of
// that owner is a read and a revision-checked write of the same key,
// durable (fsynced) before it returns. Done one at a time, a key's work is
// bounded by that round trip: a key sending tasks from many clients waited
// in line for its ledger. So updates of one owner on a host are batched,
// as a database commits a group: the first caller (the leader) applies
// every update queued by then, in order, to one read of the ledger and
// writes it once; the callers that queued meanwhile wait for that write,
// and the first of those queued after it leads the next batch. Each update
// still sees the ones before it (a quota check counts the admissions ahead
// of it), a conflict with another host re-reads and re-applies the batch,
// and each caller gets its own update's outcome.

// ledgerQueues holds, per ledger key, the updates waiting for a write.
type ledgerQueues struct {
	mu     sync.Mutex
	owners map[string]*ledgerQueue
}

// ledgerQueue is one ledger's waiting updates; busy while a batch is
// being written.
type ledgerQueue struct {
	pending []*ledgerOp
	busy    bool
}

// ledgerOp is one update in a batch.
type ledgerOp struct {
	fn   func(l *usageLedger, now int64) error
	err  error         // the update's outcome, set before wake closes
	wake chan struct{} // closed when err is set, or when lead is
	lead bool          // woken to write the next batch
}

// update applies fn to owner's ledger (expired groups dropped) and stores
// the result with a revision check, re-reading (after a short, jittered
// wait) on a conflict. fn's error aborts fn's update, without a write when
// it is the only one; fn must leave the ledger unchanged when it fails. The
// write is batched with the updates of owner queued meanwhile on this host,
// and runs to its end (at most ledgerTimeout) even if ctx ends first, as it
// may carry other callers' updates.
func (u *Usage) update(ctx context.Context, owner string, fn func(l *usageLedger, now int64) error) error {
	key := u.key(owner)
	op := &ledgerOp{fn: fn, wake: make(chan struct{})}
	q := &u.queues
	q.mu.Lock()
	if q.owners == nil {
		q.owners = map[string]*ledgerQueue{}
	}
	lq := q.owners[key]
	if lq == nil {
		lq = &ledgerQueue{}
		q.owners[key] = lq
	}
	lq.pending = append(lq.pending, op)
	lead := !lq.busy
	lq.busy = true
	q.mu.Unlock()
	if !lead {
		<-op.wake
		if !op.lead {
			return op.err
		}
	}
	q.mu.Lock()
	batch := lq.pending
	lq.pending = nil
	q.mu.Unlock()

	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerTimeout)
	u.write(wctx, key, batch)
	cancel()

	q.mu.Lock()
	if len(lq.pending) > 0 {
		next := lq.pending[0]
		next.lead = true
		close(next.wake)
	} else {
		lq.busy = false
		delete(q.owners, key)
	}
	q.mu.Unlock()
	for _, o := range batch {
		if o != op {
			close(o.wake)
		}
	}
	return op.err
}

// write applies batch, in order, to the ledger at key and stores it once;
// each op's err is its own update's outcome, or the write's error.
func (u *Usage) write(ctx context.Context, key string, batch []*ledgerOp) {
	_, err := u.kv.Change(ctx, key, Change[usageLedger]{Upsert: true, Apply: func(l *usageLedger) error {
		if l.Groups == nil {
			l.Groups = map[int64]usageGroup{}
		}
		now := u.cfg.Now().Unix()
		l.prune(now)
		changed := false
		for _, o := range batch {
			o.err = o.fn(l, now)
			changed = changed || o.err == nil
		}
		if !changed {
			return ErrUnchanged
		}
		return nil
	}})
	if err == nil {
		return
	}
	for _, o := range batch {
		if o.err == nil {
			o.err = err
		}
	}
}

// busy reports whether a batch of the ledger at key is being written.
func (u *Usage) busy(key string) bool {
	u.queues.mu.Lock()
	defer u.queues.mu.Unlock()
	q := u.queues.owners[key]
	return q != nil && q.busy
}
