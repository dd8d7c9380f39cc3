package plan

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Poison steps. A step that kills its host (it exhausts memory, trips a
// host bug, …) would kill every host its job is redelivered to, and the
// same host again after each restart. Each start is therefore recorded in
// the step's checkpoint with this host's boot id (store.Runs) before the
// step runs, and ended when the attempt ends in any way this host sees. A
// later delivery that finds a start still open whose boot is dead (no
// longer answers: store.Store.Dead) counts a crash; at Config.MaxCrashes
// crashes the step is quarantined: the plan fails with reason quarantined,
// the host logs it at warn, and the step never runs again. Retries, ack
// deadlines missed while the host lives and graceful shutdowns are no
// crashes. docs/RATIONALE.md ("Why are poison jobs quarantined by boot?")
// explains the design.

// crashedBoots is the error data (and plan/status error details) member
// listing the boots that died running a quarantined step.
const crashedBoots = "crashed_boots"

// handBackWait bounds the write that ends this host's run of a step at
// shutdown.
const handBackWait = 2 * time.Second

// start handles a delivery of a step job that may run: it settles the
// step's open runs (counting those of dead hosts as crashes), then
// quarantines the step, fails it for too many deliveries or a passed plan
// deadline, or runs it.
func (m *Manager) start(ctx context.Context, msg *store.Job, j job, seq uint64, rec *Record, delivered int, log *slog.Logger) {
	rec, err := m.settle(ctx, j, seq, rec)
	switch {
	case errors.Is(err, errStale):
		m.ack(ctx, msg, log)
		return
	case err != nil:
		m.retry(ctx, msg, log, err)
		return
	}
	step := rec.Definition.Steps[j.Step]
	switch runs := rec.Checkpoint.Steps[j.Step].Runs; {
	case runs.Crashes() >= m.cfg.MaxCrashes:
		boots := runs.Boots()
		log.Warn("plan: step quarantined: its host died while it ran, each time; it is not run again",
			"step_id", step.ID, "action", step.Action, "crashes", runs.Crashes(), "boots", strings.Join(boots, ","),
			"hosts", strings.Join(runs.Hosts(), ","), "boot", m.st.Boot())
		m.fail(ctx, msg, j, fault.Newf(fault.ResourceExhausted, fault.ReasonQuarantined,
			"step %q was running when its host died %d times (boots %s); it is not run again",
			step.ID, runs.Crashes(), strings.Join(boots, ", ")).With(crashedBoots, boots), log)
	case delivered >= m.cfg.MaxDeliver:
		m.fail(ctx, msg, j, fault.Newf(fault.ResourceExhausted, fault.ReasonRedeliveryExhausted,
			"step %q was handed out %d times without finishing (the host running it stopped each time)",
			step.ID, delivered), log)
	case rec.Deadline != nil && !time.Now().Before(*rec.Deadline):
		m.fail(ctx, msg, j, fault.New(fault.Timeout, fault.ReasonTimeout, "the plan's execution timeout passed"), log)
	default:
		m.runStep(ctx, msg, j, seq, rec.Owner, delivered, log)
	}
}

// settle moves the step's open runs whose boot is dead to its crashes and
// returns the record as it then is. Only a redelivery finds open runs of
// other boots, so the first delivery of a job asks nobody anything.
func (m *Manager) settle(ctx context.Context, j job, seq uint64, rec *Record) (*Record, error) {
	dead := m.st.Dead(ctx, rec.Checkpoint.Steps[j.Step].Runs)
	if len(dead) == 0 {
		return rec, nil
	}
	return m.recs.update(ctx, j.SessionID, j.PlanID, func(r *Record) error {
		if err := owns(r, j, seq); err != nil {
			return err
		}
		if !r.Checkpoint.Steps[j.Step].Runs.Settle(dead) {
			return errUnchanged
		}
		return nil
	})
}

// handBack ends this host's run of the job's step when shutdown interrupts
// it, so the next start does not count a crash. Best effort, bounded by
// handBackWait: if it cannot be written, the run counts as one.
func (m *Manager) handBack(ctx context.Context, j job, seq uint64, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handBackWait)
	defer cancel()
	_, err := m.recs.update(ctx, j.SessionID, j.PlanID, func(r *Record) error {
		if err := owns(r, j, seq); err != nil {
			return err
		}
		runs := &r.Checkpoint.Steps[j.Step].Runs
		n := len(runs.Open)
		if runs.End(m.st.Boot()); len(runs.Open) == n {
			return errUnchanged
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStale) {
		log.Warn("plan: recording a step's hand-back failed; its next start counts this run as a crash", "err", err)
	}
}
