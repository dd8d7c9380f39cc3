package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
)

// RunLeases keeps this host's leases and takes over those of lost hosts
// until ctx ends: a scan of the stored tasks at start (and once more a
// lease_ttl and a sweep later, when other boots' silence can be judged),
// then, on a cluster, a beat every lease_ttl/3, a sweep every lease_sweep
// (or at once when a host hands tasks back), and a recheck of this host's
// tasks whenever the NATS connection comes back. The host runs it once.
func (s *Service) RunLeases(ctx context.Context) {
	l := s.lease
	s.scan(ctx)
	sweep := time.NewTimer(jitter(l.sweep))
	defer sweep.Stop()
	var beat, rescan <-chan time.Time
	failing := false
	if l.held != nil {
		bt := time.NewTicker(l.held.TTL() / 3)
		defer bt.Stop()
		rt := time.NewTimer(l.held.TTL() + l.sweep)
		defer rt.Stop()
		beat, rescan = bt.C, rt.C
		failing = s.beat(ctx, false)
	}
	for {
		l.failing.Store(failing)
		select {
		case <-ctx.Done():
			return
		case <-beat:
			failing = s.beat(ctx, failing)
		case <-rescan:
			s.scan(ctx)
		case <-sweep.C:
			s.sweep(ctx)
			sweep.Reset(jitter(l.sweep))
		case <-l.kick:
			s.sweep(ctx)
		case <-l.again:
			s.recheck(ctx)
		}
	}
}

// Beating reports whether this host's task lease beats land (always with
// an embedded store): false while the store does not answer it, when other
// hosts are about to take its tasks. Health checks report it.
func (s *Service) Beating() bool { return !s.lease.failing.Load() }

// jitter is d ± 10%, so the hosts of a cluster do not sweep in step.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}

// beat renews this boot's beat; it reports whether the beat failed. The
// first beat after failures rechecks this host's tasks (the connection may
// have been half-open: cancels sent meanwhile were lost), and so does one
// after a reconnect that was not rechecked yet.
func (s *Service) beat(ctx context.Context, failing bool) bool {
	if err := s.lease.held.Beat(ctx); err != nil {
		if !failing {
			s.log.Warn("a2a: task lease beat failed; other hosts take this host's tasks after a2a.lease_ttl", "err", err)
		}
		return true
	}
	switch {
	case failing:
		s.log.Info("a2a: task lease beat works again")
		s.recheck(ctx)
	case s.lease.st.Reconnects() != s.lease.seen: // a reconnect no handler told (the caller's connection)
		s.recheck(ctx)
	}
	return false
}

// sweep settles this host's orphans and takes over the tasks of every
// lapsed boot in the leases stream.
func (s *Service) sweep(ctx context.Context) {
	l := s.lease
	s.settleOrphans(ctx)
	if l.held == nil {
		return
	}
	held, err := l.held.Held(ctx)
	if err != nil {
		s.log.Debug("a2a: task leases not listed", "err", err)
		return
	}
	for boot, names := range held {
		if boot == l.st.Boot() {
			continue // this host's own: recheck keeps them
		}
		if lapsed, err := l.held.Lapsed(ctx, boot); err != nil || !lapsed {
			continue
		}
		for _, name := range names {
			if ctx.Err() != nil {
				return
			}
			s.takeOver(ctx, boot, name)
		}
	}
}

// settleOrphans ends (or runs again) the tasks whose run here ended
// without storing their end, as a lost host's.
func (s *Service) settleOrphans(ctx context.Context) {
	l := s.lease
	l.mu.Lock()
	orphans := make(map[a2av1.TaskID]holding, len(l.orphans))
	for id, h := range l.orphans {
		orphans[id] = *h
	}
	l.mu.Unlock()
	own := l.st.Boot()
	for id, h := range orphans {
		rec, live, err := s.leased(ctx, hashToken("owner:"+h.owner), id, h.live)
		if err != nil {
			continue // the store does not answer: next sweep
		}
		if rec == nil || rec.State().IsTerminal() || rec.State().IsInterrupted() || rec.Lease == nil || rec.Lease.Boot != own ||
			s.settleLost(ctx, rec, live, own) {
			l.mu.Lock()
			delete(l.orphans, id)
			l.mu.Unlock()
			if l.held != nil && h.name != "" {
				_ = l.held.Drop(ctx, own, h.name)
			}
		}
	}
}

// takeOver settles the task that lapsed boot holds under name, and drops
// the lease once the task no longer needs it.
func (s *Service) takeOver(ctx context.Context, boot, name string) {
	drop := func() {
		if err := s.lease.held.Drop(ctx, boot, name); err != nil {
			s.log.Debug("a2a: lapsed lease not dropped", "boot", boot, "err", err)
		}
	}
	ownerHash, id, live, ok := parseLeaseName(name)
	if !ok {
		drop()
		return
	}
	rec, isLive, err := s.leased(ctx, ownerHash, id, live)
	switch {
	case err != nil:
		s.log.Debug("a2a: task of a lapsed lease not read; next sweep", "task_id", id, "err", err)
	case rec == nil || rec.State().IsTerminal() || rec.State().IsInterrupted() || rec.Lease == nil || rec.Lease.Boot != boot:
		drop() // ended, gone, waiting for input (no lease), or taken over already
	case s.settleLost(ctx, rec, isLive, boot):
		drop()
	}
}

// leased reads a leased task: its stored record, else (a blocking
// SendMessage's task) its live one. nil when neither exists.
func (s *Service) leased(ctx context.Context, ownerHash string, id a2av1.TaskID, live bool) (*Record, bool, error) {
	rec, err := s.cfg.Tasks.Get(ctx, id)
	if err == nil {
		return rec, false, nil
	}
	if !errors.Is(err, fault.ErrTaskNotFound) {
		return nil, false, err
	}
	if !live {
		return nil, false, nil
	}
	e, err := s.cfg.Tasks.live.Get(ctx, ownerHash+"."+string(id))
	switch {
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUndecodable):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case e.Value.Task == nil || hashToken("owner:"+e.Value.Owner) != ownerHash:
		return nil, false, nil
	}
	return e.Value, true, nil
}

// scan takes over the stored tasks (submitted or working) whose lease
// names a lapsed boot: at start, the previous boot of this host's data
// directory (or, embedded, any earlier one) at once. A task without a
// lease (stored before leases existed) is lost once it has not changed for
// legacyAge.
func (s *Service) scan(ctx context.Context) {
	own, n := s.lease.st.Boot(), 0
	for _, state := range []TaskState{StateSubmitted, StateWorking} {
		for key, err := range s.cfg.Tasks.idx.Keys(ctx, "*.*.*."+state.V03()+".*.*") {
			if err != nil {
				s.log.Debug("a2a: running tasks not listed", "err", err)
				return
			}
			if n++; n > maxListScan || ctx.Err() != nil {
				return
			}
			id := a2av1.TaskID(key[strings.LastIndexByte(key, '.')+1:])
			rec, err := s.cfg.Tasks.Get(ctx, id)
			if err != nil || rec.State().IsTerminal() {
				continue // gone, or a stale index key
			}
			switch {
			case rec.Lease == nil:
				if time.Since(rec.Updated) > legacyAge {
					s.settleLost(ctx, rec, false, "")
				}
			case rec.Lease.Boot != own:
				if s.lapsed(ctx, rec.Lease.Boot) && s.settleLost(ctx, rec, false, rec.Lease.Boot) && s.lease.held != nil {
					_ = s.lease.held.Drop(ctx, rec.Lease.Boot, leaseName(rec.Owner, id, false))
				}
			}
		}
	}
}

// lapsed asks whether boot's leases lapsed: at once for any other boot
// with an embedded store.
func (s *Service) lapsed(ctx context.Context, boot string) bool {
	if s.lease.held == nil {
		return s.lease.st.Embedded() && boot != s.lease.st.Boot()
	}
	lapsed, err := s.lease.held.Lapsed(ctx, boot)
	return err == nil && lapsed
}

// settleLost runs rec, a task whose holder boot lapsed, again here when it
// may (retryable, and this host has room), or ends it host_lost. It
// reports whether the lapsed lease is settled (false: try again later).
func (s *Service) settleLost(ctx context.Context, rec *Record, live bool, boot string) bool {
	if s.retryable(rec) {
		switch s.retry(ctx, rec, live, boot) {
		case retried:
			return true
		case busy:
			return false // another host, or a later sweep, runs it
		}
	}
	return s.endLost(ctx, rec, live, boot) == nil
}

// retryable reports whether rec may run again: its skill says it is
// idempotent, it ran fewer than maxRuns times, and its owner is known.
func (s *Service) retryable(rec *Record) bool {
	if rec.Lease != nil && rec.Lease.Attempt >= maxRuns {
		return false
	}
	p, sk, ok := s.cfg.Snapshot().Skill(rec.SkillID)
	if !ok || !sk.Idempotent || p.Manifest.Name != rec.Plugin {
		return false
	}
	_, ok = s.lease.principals(rec.Owner)
	return ok
}

// Outcomes of retry.
type retryOutcome int

const (
	retried retryOutcome = iota // claimed and running here (or claimed by another host first)
	busy                        // not now: no room, or this host is shutting down
	refused                     // it cannot run again: end it
)

// retry claims rec (whose lease names boot) for this boot and runs it
// again.
func (s *Service) retry(ctx context.Context, rec *Record, live bool, boot string) retryOutcome {
	who, ok := s.lease.principals(rec.Owner)
	input, err := lastInput(rec)
	if !ok || err != nil {
		return refused
	}
	id := rec.Task.ID
	r, rctx, err := s.occupy(auth.With(ctx, who), who, id)
	if err != nil {
		return busy
	}
	attempt := 1
	if rec.Lease != nil {
		attempt = rec.Lease.Attempt + 1
	}
	claimed, err := s.claim(ctx, rec, live, boot, s.newLease(attempt))
	if err == nil {
		err = s.holdEntry(ctx, claimed, live)
	}
	switch {
	case errors.Is(err, errMoved):
		s.finish(id, r)
		return retried // another host claimed it first
	case err != nil:
		s.log.Warn("a2a: task of a lost host not claimed; next sweep", "task_id", id, "err", err)
		s.finish(id, r)
		return busy
	}
	s.log.Info("a2a: running a task of a lost host again (its skill is idempotent)", "task_id", id,
		"lost_boot", boot, "attempt", attempt)
	if live {
		s.lease.stored(id)
		go s.executeBlocking(rctx, r, claimed, input, "")
	} else {
		s.lease.stored(id)
		s.announce(ctx, claimed, nil)                   // working again, here
		go s.execute(rctx, r, claimed, input, "", true) // the claim moved it to working
	}
	return retried
}

// errMoved: the task's lease no longer names the boot a sweeper read.
var errMoved = errors.New("a2a: the task's lease moved")

// sameLease reports whether lease still names boot ("" for none).
func sameLease(lease *Lease, boot string) bool {
	if lease == nil {
		return boot == ""
	}
	return lease.Boot == boot
}

// claim rewrites rec's lease from boot to lease, checked by revision.
func (s *Service) claim(ctx context.Context, rec *Record, live bool, boot string, lease *Lease) (*Record, error) {
	apply := func(r *Record) error {
		if r.Task == nil || !sameLease(r.Lease, boot) || r.State().IsTerminal() || r.State().IsInterrupted() {
			return errMoved
		}
		r.Lease = lease
		r.note = note{reason: fault.ReasonHostLost}
		return nil
	}
	if !live {
		return s.cfg.Tasks.Update(ctx, rec.Task.ID, StateWorking, apply)
	}
	e, err := s.cfg.Tasks.live.Change(ctx, liveKey(rec.Owner, rec.Task.ID), store.Change[Record]{Apply: apply})
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// endLost ends rec, whose lease names boot, failed with host_lost; its
// subscribers and push receivers are told. A task ended or claimed
// meanwhile is left as it is (nil).
func (s *Service) endLost(ctx context.Context, rec *Record, live bool, boot string) error {
	cause := lostCause(rec.Lease)
	id := rec.Task.ID
	if live {
		from, now := rec.State(), time.Now().UTC()
		rec.Task.Status = a2av1.TaskStatus{State: StateFailed.Wire(), Message: errorMessage(rec.Task, cause), Timestamp: &now}
		rec.note = note{reason: fault.ReasonHostLost}
		if err := s.cfg.Tasks.signMove(rec, from, len(rec.Task.Artifacts)); err != nil {
			return err
		}
		_, _, err := s.storeFinal(ctx, rec, nil)
		return err
	}
	got, err := s.cfg.Tasks.Update(ctx, id, StateFailed, func(r *Record) error {
		if !sameLease(r.Lease, boot) || r.State().IsInterrupted() {
			return errMoved
		}
		r.Task.Status.Message = errorMessage(r.Task, cause)
		r.note = note{reason: fault.ReasonHostLost}
		return nil
	})
	if errors.Is(err, errMoved) || errors.Is(err, fault.ErrInvalidState) {
		return nil
	}
	if err != nil {
		s.log.Warn("a2a: task of a lost host not ended; next sweep", "task_id", id, "err", err)
		return err
	}
	s.log.Info("a2a: task of a lost host ended", "task_id", id, "lost_boot", boot, "reason", fault.ReasonHostLost)
	s.announce(ctx, got, nil)
	return nil
}

// lastInput is the skill input of rec's latest user message (the turn
// that was running).
func lastInput(rec *Record) (json.RawMessage, error) {
	for i := len(rec.Task.History) - 1; i >= 0; i-- {
		if m := rec.Task.History[i]; m != nil && m.Role == a2av1.MessageRoleUser {
			return inputOf(m)
		}
	}
	return nil, errors.New("a2a: task has no user message")
}
