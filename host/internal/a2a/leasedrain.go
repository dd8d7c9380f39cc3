package a2a

import (
	"context"
	"errors"
	"fmt"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
)

// Drain stops taking new tasks — SendMessage and its kin answer -32106
// draining, a retryable refusal — and waits until the running tasks end or
// ctx does (the shutdown grace). Everything else is still served: clients
// follow, cancel and read their tasks meanwhile. Close hands back what
// still runs.
func (s *Service) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.lease.draining.Store(true)
	n := len(s.running)
	s.mu.Unlock()
	if n > 0 {
		s.log.Info("a2a: draining: no new tasks; waiting for the running ones", "running", n)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("a2a: drain: %w", ctx.Err())
	}
}

// Draining reports whether Drain or Close began (health checks answer 503,
// so a load balancer sends new work elsewhere).
func (s *Service) Draining() bool { return s.lease.draining.Load() }

// Close stops every task still running here and waits for them (or ctx):
// each is handed back — ended host_lost here, or, when its skill is
// idempotent, left for another host (told at once: the lease is released
// and every host sweeps) or for this host's restart to run again.
func (s *Service) Close(ctx context.Context) error {
	if s.cancels != nil {
		s.cancels()
	}
	for _, stop := range s.lease.stops {
		stop()
	}
	s.mu.Lock()
	s.closed = true
	s.lease.draining.Store(true)
	for id, r := range s.running {
		r.cancel(handBackErr(id))
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("a2a: close: %w", ctx.Err())
	}
	return s.release(ctx)
}

// release tells the other hosts about the tasks handed back, if any.
func (s *Service) release(ctx context.Context) error {
	l := s.lease
	if l.held == nil {
		return nil
	}
	held, err := l.held.Held(ctx)
	if err != nil || len(held[l.st.Boot()]) == 0 {
		return nil //nolint:nilerr // nothing to hand back that can be told now; the lease lapses by itself
	}
	if err := l.held.Release(ctx); err != nil {
		return fmt.Errorf("a2a: hand back task leases: %w", err)
	}
	if err := l.st.Signal(SweepSubject); err != nil {
		s.log.Debug("a2a: sweep request not sent (hosts sweep within a2a.lease_sweep)", "err", err)
	}
	s.log.Info("a2a: task leases handed back", "tasks", len(held[l.st.Boot()]))
	return nil
}

// recheck catches up after the NATS connection came back: every task this
// host runs is read again, and one that was canceled (the cancel was sent
// while this host could not hear it), ended or taken over meanwhile is
// stopped. Its lease is named again (the leases stream is in memory), and
// leases this boot no longer holds are dropped.
func (s *Service) recheck(ctx context.Context) {
	l := s.lease
	l.seen = l.st.Reconnects()
	l.mu.Lock()
	runs := make(map[a2av1.TaskID]holding, len(l.runs))
	for id, h := range l.runs {
		runs[id] = *h
	}
	l.mu.Unlock()
	for id, h := range runs {
		if h.name != "" {
			_ = l.held.Hold(ctx, h.name)
		}
		if cause := s.stale(ctx, id, h); cause != nil {
			s.log.Info("a2a: task changed while this host was cut off; stopping it", "task_id", id, "reason", cause.Reason)
			s.stopHere(id, cause)
		}
	}
	held, err := l.held.Held(ctx)
	if err != nil {
		return
	}
	names := map[string]bool{}
	for _, h := range runs {
		names[h.name] = true
	}
	l.mu.Lock()
	for _, h := range l.orphans {
		names[h.name] = true
	}
	l.mu.Unlock()
	for _, name := range held[l.st.Boot()] {
		if _, id, _, ok := parseLeaseName(name); !names[name] && (!ok || !l.holds(id)) {
			_ = l.held.Drop(ctx, l.st.Boot(), name)
		}
	}
}

// stale is why task id, running here under h, must stop (nil: it goes on).
func (s *Service) stale(ctx context.Context, id a2av1.TaskID, h holding) *fault.Error {
	rec, err := s.cfg.Tasks.Get(ctx, id)
	switch {
	case err == nil && rec.State() == StateCanceled:
		return fault.New(fault.Canceled, fault.ReasonCanceled, "canceled by the client")
	case err == nil && rec.State().IsTerminal():
		return fault.Newf(fault.InvalidState, fault.ReasonTaskTerminal, "the task ended as %s elsewhere", rec.State().V03())
	case err == nil:
		return s.moved(id, rec.Lease, h)
	case !errors.Is(err, fault.ErrTaskNotFound) || !h.live:
		return nil
	}
	lrec, err := s.cfg.Tasks.getLive(ctx, h.owner, id)
	if err != nil || lrec == nil {
		return nil
	}
	return s.moved(id, lrec.Lease, h)
}

// moved is takenErr when lease shows another boot claimed the task after
// this host's run began.
func (s *Service) moved(id a2av1.TaskID, lease *Lease, h holding) *fault.Error {
	if lease != nil && lease.Boot != s.lease.st.Boot() && lease.Attempt > h.attempt {
		return takenErr(id)
	}
	return nil
}

// stopHere stops task id's sandbox call if it runs here.
func (s *Service) stopHere(id a2av1.TaskID, cause *fault.Error) {
	s.mu.Lock()
	r := s.running[id]
	s.mu.Unlock()
	if r != nil {
		r.cancel(cause)
	}
}
