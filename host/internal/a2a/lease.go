package a2a

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Task leases: every task that runs has an owner that can be lost. The
// host boot running a task holds its lease (Record.Lease, written with the
// task: the boot, its host name, and which run of the task this is). On a
// NATS cluster the boot also names the task in the leases stream
// (store.Leases: "<s|l>.<owner hash>.<task id>" under its boot) and beats
// every lease_ttl/3; every host sweeps every lease_sweep (leasetake.go): a
// task held by a lapsed boot (store.Leases.Lapsed: released, known dead, or
// silent for lease_ttl) is taken over — run again on the sweeping host when
// its skill is idempotent (the lease rewritten by a revision-checked write,
// so one host wins), ended failed with reason host_lost otherwise, its
// subscribers and push receivers told either way. At start a host also
// reads every stored task that is submitted or working, so a restarted host
// ends its previous boot's tasks at once (and an embedded store, one host
// with no leases stream, gets the same). A task waiting for input holds no
// lease: nothing runs. A host that reconnects to NATS re-reads the tasks it
// runs (leasedrain.go): one canceled or taken over meanwhile stops. A
// draining host takes no new task (draining) and hands back what is still
// running at the end of its grace. See docs/RATIONALE.md ("Why do tasks
// have leases?").
const (
	// LeasesStream and LeasesSubject are where boots name the tasks they run.
	LeasesStream  = "SKILLHOST_A2A_LEASES"
	LeasesSubject = "skillhost.a2a.leases"
	// SweepSubject asks every host to sweep now (a host handed tasks back).
	SweepSubject = "skillhost.a2a.sweep"

	// maxRuns bounds the runs of an idempotent task: a skill that kills
	// every host it runs on ends host_lost after its third.
	maxRuns = 3
	// legacyAge: a task stored without a lease (before leases existed)
	// that is still running this long after its last update is lost.
	legacyAge = liveTTL
	// dropWait bounds the write that drops a finished task's lease.
	dropWait = 5 * time.Second
	// maxFinalWait caps the wait between tries of a task's final write
	// while the store does not answer.
	maxFinalWait = 2 * time.Second
)

// Lease is who runs a task: the boot of its host (store.Run) and which run
// of the task it is (1 for the first; an idempotent task taken over from a
// lost host runs again with the next).
type Lease struct {
	store.Run
	Attempt int `json:"attempt"`
}

// leases is the Service's side of task leases. Safe for concurrent use.
type leases struct {
	st         *store.Store
	held       *store.Leases // nil with an embedded store: one host, nobody to tell
	sweep      time.Duration
	principals func(owner string) (auth.Principal, bool)

	draining atomic.Bool
	failing  atomic.Bool   // the latest beat failed
	kick     chan struct{} // sweep now
	again    chan struct{} // the connection came back: recheck
	seen     uint64        // the store's Reconnects at the latest recheck (RunLeases' goroutine only)
	stops    []func()

	mu      sync.Mutex
	runs    map[a2av1.TaskID]*holding // the tasks this host runs
	orphans map[a2av1.TaskID]*holding // runs that ended without recording an end (sweep settles them)
}

// holding is a task this host runs.
type holding struct {
	ctx     context.Context // the start's values, no cancel: for the drop
	name    string          // in the leases stream; "" with an embedded store
	owner   string
	live    bool // a blocking SendMessage's task (live.go)
	attempt int
	keep    bool // handed back: the lease stays for another host
	// stored: a record of the task may exist (its Create or live record was
	// sent); settled: the run recorded its end (or the task ended
	// otherwise, or another host took it). A run that ends stored but not
	// settled left the task unfinished in the store (a write whose answer
	// was lost, a move the store refused): its lease stays and the sweep
	// settles it as a lost host's.
	stored, settled bool
}

// openLeases opens the leases stream on a cluster (nil, nil embedded).
func openLeases(ctx context.Context, st *store.Store, ttl time.Duration) (*store.Leases, error) {
	if st.Embedded() {
		return nil, nil
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("a2a: a2a.lease_ttl %v: must be positive", ttl)
	}
	l, err := st.OpenLeases(ctx, store.LeasesConfig{Name: LeasesStream, Subject: LeasesSubject, TTL: ttl})
	if err != nil {
		return nil, fmt.Errorf("a2a: open task leases: %w", err)
	}
	return l, nil
}

// newLeases wires the Service's leases: cancels and sweep requests missed
// while the connection was down are caught up when it returns.
func (s *Service) newLeases(cfg ServiceConfig) error {
	l := &leases{st: s.events.st, held: cfg.Tasks.held, sweep: cfg.LeaseSweep, principals: cfg.Principals,
		kick: make(chan struct{}, 1), again: make(chan struct{}, 1), runs: map[a2av1.TaskID]*holding{},
		orphans: map[a2av1.TaskID]*holding{}}
	if l.sweep <= 0 {
		return fmt.Errorf("a2a: a2a.lease_sweep %v: must be positive", l.sweep)
	}
	if l.principals == nil {
		l.principals = (*auth.KeySet)(nil).PrincipalOf // local owners only
	}
	s.lease = l
	if l.held == nil {
		return nil
	}
	stop, err := l.st.Listen(SweepSubject, func(string) { nudge(l.kick) })
	if err != nil {
		return fmt.Errorf("a2a: listen for sweeps: %w", err)
	}
	l.seen = l.st.Reconnects()
	l.stops = append(l.stops, stop, l.st.OnReconnect(func() { nudge(l.again) }))
	return nil
}

func nudge(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// leaseName is a task's name in the leases stream.
func leaseName(owner string, id a2av1.TaskID, live bool) string {
	kind := "s"
	if live {
		kind = "l"
	}
	return kind + "." + hashToken("owner:"+owner) + "." + string(id)
}

// parseLeaseName splits a leaseName.
func parseLeaseName(name string) (ownerHash string, id a2av1.TaskID, live, ok bool) {
	parts := strings.Split(name, ".")
	if len(parts) != 3 || (parts[0] != "s" && parts[0] != "l") || checkTaskID(a2av1.TaskID(parts[2])) != nil {
		return "", "", false, false
	}
	return parts[1], a2av1.TaskID(parts[2]), parts[0] == "l", true
}

// newLease is a lease of this boot for the attempt-th run.
func (s *Service) newLease(attempt int) *Lease {
	return &Lease{Run: s.lease.st.Run(time.Now()), Attempt: attempt}
}

// hold makes this boot the holder of rec, a task about to run (stored
// with its lease; live: a blocking SendMessage's). Undone by finish.
func (s *Service) hold(ctx context.Context, rec *Record, live bool) error {
	rec.Lease = s.newLease(1)
	return s.holdEntry(ctx, rec, live)
}

// holdTurn makes this boot the holder of rec's next turn (a follow-up
// message, turns.go): the lease to store with the move to working.
func (s *Service) holdTurn(ctx context.Context, rec *Record) (*Lease, error) {
	turn := *rec
	turn.Lease = s.newLease(1)
	if err := s.holdEntry(ctx, &turn, false); err != nil {
		return nil, err
	}
	s.lease.stored(rec.Task.ID)
	return turn.Lease, nil
}

// holdEntry records that this host runs rec (under rec.Lease) and, on a
// cluster, names it in the leases stream, without waiting: the record's
// own write follows on the same connection, so once that is acknowledged
// the lease was delivered before it (a live task's record is not waited
// for either: nobody was told of the task yet).
func (s *Service) holdEntry(ctx context.Context, rec *Record, live bool) error {
	l := s.lease
	h := &holding{ctx: context.WithoutCancel(ctx), owner: rec.Owner, live: live, attempt: rec.Lease.Attempt}
	if l.held != nil {
		h.name = leaseName(rec.Owner, rec.Task.ID, live)
		if err := l.held.HoldNoWait(h.name); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.runs[rec.Task.ID] = h
	l.mu.Unlock()
	return nil
}

// unhold forgets a task that no longer runs here and drops its lease
// (unless it was handed back), without waiting.
func (s *Service) unhold(id a2av1.TaskID) {
	l := s.lease
	l.mu.Lock()
	h := l.runs[id]
	delete(l.runs, id)
	l.mu.Unlock()
	switch {
	case h == nil || h.keep:
		return
	case h.stored && !h.settled:
		s.log.Warn("a2a: task ended here without its end stored; a sweep ends it", "task_id", id)
		l.mu.Lock()
		l.orphans[id] = h
		l.mu.Unlock()
		return
	case h.name == "":
		return
	}
	boot := l.st.Boot()
	go func() {
		ctx, cancel := context.WithTimeout(h.ctx, dropWait)
		defer cancel()
		if err := l.held.Drop(ctx, boot, h.name); err != nil {
			s.log.Debug("a2a: lease of a finished task not dropped (a later sweep does)", "task_id", id, "err", err)
		}
	}()
}

// keep marks a task's lease as handed back: it stays for another host.
func (l *leases) keep(id a2av1.TaskID) { l.mark(id, func(h *holding) { h.keep = true }) }

// stored marks that a record of the task may exist from now on.
func (l *leases) stored(id a2av1.TaskID) { l.mark(id, func(h *holding) { h.stored = true }) }

// settle marks that the task's end is recorded (or not this host's to
// record).
func (l *leases) settle(id a2av1.TaskID) { l.mark(id, func(h *holding) { h.settled = true }) }

func (l *leases) mark(id a2av1.TaskID, f func(*holding)) {
	l.mu.Lock()
	if h := l.runs[id]; h != nil {
		f(h)
	}
	l.mu.Unlock()
}

// holds reports whether this host runs task id.
func (l *leases) holds(id a2av1.TaskID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[id] != nil
}

// Why a run was stopped without an outcome this host may record (the
// causes wrap them, so nothing a skill returns is mistaken for them).
var (
	errHandedBack = errors.New("a2a: task handed back")
	errTaken      = errors.New("a2a: task taken over")
)

// handBackErr stops a task at the end of a drain.
func handBackErr(id a2av1.TaskID) *fault.Error {
	return fault.Wrap(fault.ResourceExhausted, fault.ReasonDraining, errHandedBack,
		"this host shut down before the task ended; another host ends it or runs it again").With("task_id", string(id))
}

// takenErr stops a task another host took over while this one was cut off.
func takenErr(id a2av1.TaskID) *fault.Error {
	return fault.Wrap(fault.Internal, fault.ReasonHostLost, errTaken,
		"another host took the task over while this host was cut off from the store").With("task_id", string(id))
}

// lostCause is the status of a task whose host (lease) was lost.
func lostCause(lease *Lease) *fault.Error {
	who := "an unknown host"
	if lease != nil {
		who = "boot " + lease.Boot
		if lease.Host != "" {
			who = "host " + lease.Host + ", " + who
		}
	}
	f := fault.Newf(fault.Internal, fault.ReasonHostLost, "the host running the task (%s) was lost before the task ended", who)
	if lease != nil {
		f = f.With("boot", lease.Boot)
	}
	return f
}

// afterRun decides what a run that ended with err records. A run stopped
// because another host took the task over records nothing (done). One
// handed back at the end of a drain records nothing when another host (or
// this one's restart) will run it again, and ends the task host_lost here
// otherwise (so a blocking client gets that task, not an error).
func (s *Service) afterRun(rec *Record, live bool, err error) (bool, error) {
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, errTaken):
		s.lease.settle(rec.Task.ID)
		return true, err
	case errors.Is(err, errHandedBack):
		if s.retryable(rec) && !(live && s.lease.st.Embedded()) {
			s.lease.keep(rec.Task.ID)
			return true, err
		}
		return false, lostCause(rec.Lease)
	}
	return false, err
}

// refusal is why start takes no new task now; nil when it may. s.mu held.
func (s *Service) refusal() error {
	if s.closed || s.lease.draining.Load() {
		return fault.New(fault.ResourceExhausted, fault.ReasonDraining,
			"this host is shutting down and takes no new tasks; send the message to another host")
	}
	if len(s.running) >= s.cfg.MaxRunning {
		return fault.Newf(fault.ResourceExhausted, fault.ReasonPoolSaturated, "%d tasks are already running on this host", s.cfg.MaxRunning)
	}
	return nil
}

// unavailable reports a store that did not answer.
func unavailable(err error) bool {
	return errors.Is(err, fault.New(fault.Internal, fault.ReasonStoreUnavailable, ""))
}

// durably retries write, a task's final write, while the store does not
// answer and the task still runs here (its lease held): a host cut off
// from NATS records the outcome once it is back, or, past the lease, finds
// the task ended elsewhere. It gives up when ctx ends or the host closes,
// leaving the lease for another host.
func (s *Service) durably(ctx context.Context, id a2av1.TaskID, write func() error) error {
	err := write()
	wait := 100 * time.Millisecond
	for logged := false; err != nil && unavailable(err) && s.lease.holds(id); err = write() {
		if !logged {
			s.log.Warn("a2a: the store does not answer; retrying the task's final write", "task_id", id, "err", err)
			logged = true
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			s.lease.keep(id)
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, maxFinalWait)
	}
	return err
}

// update is TaskStore.Update, retried durably for a terminal move of a
// task this host runs.
func (s *Service) update(ctx context.Context, id a2av1.TaskID, next TaskState, fn func(*Record) error) (*Record, error) {
	var rec *Record
	write := func() (err error) {
		rec, err = s.cfg.Tasks.Update(ctx, id, next, fn)
		return err
	}
	var err error
	if !next.IsTerminal() && !next.IsInterrupted() {
		err = write()
	} else {
		err = s.durably(ctx, id, write)
	}
	return rec, err // rec is read after the write (in `return rec, write()` the order is unspecified)
}

// createFinal is TaskStore.CreateFinal, retried durably.
func (s *Service) createFinal(ctx context.Context, rec *Record) (stored *Record, won bool, err error) {
	err = s.durably(ctx, rec.Task.ID, func() (err error) {
		stored, won, err = s.cfg.Tasks.CreateFinal(ctx, rec)
		return err
	})
	return stored, won, err
}
