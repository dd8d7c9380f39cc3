package plan

import "time"

// terminal reports whether a plan status is final for its execution.
func terminal(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// active reports whether a step status is queued, running or retrying.
func active(status string) bool {
	return status == StepQueued || status == StepRunning || status == StepRetrying
}

// queueReady marks as queued, and returns, the steps that may start now:
// pending steps whose dependencies have all completed. A sequential plan
// gets at most one (the first in definition order), and only while no step
// is active; a parallel plan gets all of them.
func (r *Record) queueReady(g graph) []int {
	steps := r.Checkpoint.Steps
	if !r.Parallel {
		for _, s := range steps {
			if active(s.Status) {
				return nil
			}
		}
	}
	var out []int
	for i := range steps {
		if steps[i].Status != StepPending || !r.depsDone(g, i) {
			continue
		}
		steps[i].Status = StepQueued
		out = append(out, i)
		if !r.Parallel {
			break
		}
	}
	return out
}

// depsDone reports whether every dependency of step i has completed.
func (r *Record) depsDone(g graph, i int) bool {
	for _, j := range g.deps[i] {
		if r.Checkpoint.Steps[j].Status != StepCompleted {
			return false
		}
	}
	return true
}

// withStatus lists the steps in one status, in definition order.
func (r *Record) withStatus(status string) []int {
	var out []int
	for i, s := range r.Checkpoint.Steps {
		if s.Status == status {
			out = append(out, i)
		}
	}
	return out
}

// endActive marks every queued, running or retrying step cancelled: the
// execution ended while they waited or ran.
func (r *Record) endActive(now time.Time) {
	for i := range r.Checkpoint.Steps {
		s := &r.Checkpoint.Steps[i]
		if active(s.Status) {
			s.Status = StepCancelled
			if s.StartedAt != nil {
				s.FinishedAt = &now
			}
		}
	}
}

// allCompleted reports whether every step has completed.
func (r *Record) allCompleted() bool {
	return r.Checkpoint.Completed() == len(r.Definition.Steps)
}

// consistent reports whether the checkpoint fits the definition (a record
// written by an incompatible version does not).
func (r *Record) consistent() bool {
	return len(r.Checkpoint.Steps) == len(r.Definition.Steps)
}

// heldBy returns the step the job with stream sequence seq runs (running
// or waiting to retry), if any: a job runs its own step, then possibly the
// steps that step made ready, one after another (runStep).
func (r *Record) heldBy(seq uint64) (int, bool) {
	for i, s := range r.Checkpoint.Steps {
		if s.Job == seq && (s.Status == StepRunning || s.Status == StepRetrying) {
			return i, true
		}
	}
	return 0, false
}
