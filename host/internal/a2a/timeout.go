package a2a

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

// errAnswered aborts an expiry: the task moved on (or was answered) since
// the index key said it waits.
var errAnswered = errors.New("a2a: task no longer waits")

// Run expires interrupted tasks left alone for InputTimeout, checking every
// quarter of it (at least every 50ms, at most every minute), until ctx ends.
// Every host runs it; the revision-checked update lets one win per task.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(min(max(s.cfg.InputTimeout/4, 50*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.ExpireInterrupted(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("a2a: expiring tasks that wait for input", "err", err)
			} else if n > 0 {
				s.log.Info("a2a: tasks waiting for input expired", "tasks", n, "input_timeout", s.cfg.InputTimeout)
			}
		}
	}
}

// ExpireInterrupted fails every task that has waited for input longer than
// InputTimeout (reason input_timeout) and reports how many it failed. It
// reads the task index's keys of interrupted tasks only.
func (s *Service) ExpireInterrupted(ctx context.Context) (int, error) {
	cutoff := time.Now().Add(-s.cfg.InputTimeout).UnixNano()
	n := 0
	for _, st := range []TaskState{StateInputRequired, StateAuthRequired} {
		filter := strings.Join([]string{"*", "*", "*", st.V03(), "*", "*"}, ".")
		var old []indexEntry
		for key, err := range s.cfg.Tasks.idx.Keys(ctx, filter) {
			if err != nil {
				return n, fmt.Errorf("a2a: list waiting tasks: %w", err)
			}
			if e, ok := parseIndexKey(key); ok && e.updated <= cutoff {
				old = append(old, e)
			}
		}
		for _, e := range old {
			if s.expire(ctx, e, cutoff) {
				n++
			}
		}
	}
	return n, ctx.Err()
}

// expire fails task e.id if it still waits since before cutoff.
func (s *Service) expire(ctx context.Context, e indexEntry, cutoff int64) bool {
	cause := fault.Newf(fault.Timeout, fault.ReasonInputTimeout, "the task waited %s for a follow-up message (a2a.input_timeout)", s.cfg.InputTimeout)
	rec, err := s.cfg.Tasks.Update(ctx, e.id, StateFailed, func(r *Record) error {
		if !r.State().IsInterrupted() || r.Updated.UnixNano() > cutoff {
			return errAnswered
		}
		r.Task.Status.Message = errorMessage(r.Task, cause)
		r.note = note{reason: fault.ReasonInputTimeout}
		return nil
	})
	if err != nil {
		if !errors.Is(err, errAnswered) && !errors.Is(err, fault.ErrInvalidState) && fault.KindOf(err) != fault.TaskNotFound {
			s.log.Warn("a2a: waiting task not expired", "task_id", e.id, "err", err)
		}
		if fault.KindOf(err) == fault.TaskNotFound {
			s.cfg.Tasks.dropIndex(ctx, e.key)
		}
		return false
	}
	s.announce(ctx, rec, nil)
	return true
}
