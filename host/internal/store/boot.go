package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Boots: every Open is one boot of a host, with an id of its own. A boot
// answers on BootSubject(id) for as long as its connection is up, so any host
// of the cluster can ask whether the boot that started a job still lives:
// NATS answers "no responders" at once when no connection subscribes to the
// subject, which is the case as soon as the boot's process is gone (SIGKILL
// and out-of-memory deaths included: the kernel closes its sockets; in
// embedded mode the server died with it). That is what tells a host death
// from a job redelivered while its host is alive (see Runs).
const (
	// BootSubjectBase is the subject prefix boots answer on.
	BootSubjectBase = "skillhost.boots"
	// bootIDPrefix starts every boot id.
	bootIDPrefix = "boot_"
	// aliveWait bounds one liveness question.
	aliveWait = 2 * time.Second
	// pingInterval and maxPingsOut: how soon nats.go gives up a connection
	// that stopped answering (see Open).
	pingInterval = 5 * time.Second
	maxPingsOut  = 3
)

// BootSubject is the subject the boot id answers on.
func BootSubject(id string) string { return BootSubjectBase + "." + id }

func newBootID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return bootIDPrefix + hex.EncodeToString(b[:])
}

// answerBoot subscribes the boot's liveness subject and records the boot
// in the data directory (bootFile), reading the one it replaces.
func (s *Store) answerBoot() error {
	s.boot = newBootID()
	s.hostname, _ = os.Hostname() // "" when unknown: runs then name the boot only
	var err error
	s.bootSub, err = s.nc.Subscribe(BootSubject(s.boot), func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		return fmt.Errorf("store: boot subject: %w", err)
	}
	s.prev = s.swapBootFile()
	return nil
}

// bootFile, in Config.DataDir, names the latest boot that used the
// directory: after a restart it names the boot before this one, whose work
// is then known to be orphaned once NATS has no responder for it.
const bootFile = "boot.id"

// swapBootFile writes this boot's id to the boot file and returns the id it
// held ("" when none, or without a data directory). A failure only costs
// the shortcut (Leases.Lapsed then waits for the TTL); it is logged.
func (s *Store) swapBootFile() string {
	if s.cfg.DataDir == "" {
		return ""
	}
	path := filepath.Join(s.cfg.DataDir, bootFile)
	var prev string
	if b, err := os.ReadFile(path); err == nil && len(b) <= 64 && strings.HasPrefix(string(b), bootIDPrefix) {
		prev = strings.TrimSpace(string(b))
	}
	tmp := path + ".tmp"
	err := os.MkdirAll(s.cfg.DataDir, 0o700)
	if err == nil {
		err = os.WriteFile(tmp, []byte(s.boot), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		s.log.Debug("store: boot id not recorded in the data directory", "err", err)
	}
	return prev
}

// PreviousBoot is the boot that used this store's data directory before
// this one ("" when unknown).
func (s *Store) PreviousBoot() string { return s.prev }

// Embedded reports whether the store runs its own NATS server in process:
// then no other host shares it, and every other boot is an earlier process.
func (s *Store) Embedded() bool { return s.srv != nil }

// OnReconnect calls fn (on a goroutine of its own) each time the NATS
// connection is re-established after a loss, until stop is called: what
// core NATS delivered meanwhile (cancels) was missed, and the caller
// catches up from what is stored. On the caller's connection
// (Config.Conn) the store installs no handler and fn is never called:
// compare Reconnects instead.
func (s *Store) OnReconnect(fn func()) (stop func()) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	if s.reconnects == nil {
		s.reconnects = map[int]func(){}
	}
	id := s.nextHook
	s.nextHook++
	s.reconnects[id] = fn
	return func() {
		s.hooksMu.Lock()
		delete(s.reconnects, id)
		s.hooksMu.Unlock()
	}
}

func (s *Store) reconnected() {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	for _, fn := range s.reconnects {
		go fn()
	}
}

// Reconnects counts the times the NATS connection was re-established
// after a loss, on any connection (Config.Conn's included).
func (s *Store) Reconnects() uint64 { return s.nc.Stats().Reconnects }

// Boot is this store's boot id: unique per Open, never reused.
func (s *Store) Boot() string { return s.boot }

// Run is a start of a job by this boot at at, for Runs.Start.
func (s *Store) Run(at time.Time) Run { return Run{Boot: s.boot, Host: s.hostname, At: at.UTC()} }

// Alive reports whether the boot id still lives: its own boot always does;
// another is dead when NATS has no responder for it. An error (the question
// timed out, the connection is down) means unknown: callers must not count
// such a boot as dead.
func (s *Store) Alive(ctx context.Context, id string) (bool, error) {
	if id == s.boot {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, aliveWait)
	defer cancel()
	_, err := s.nc.RequestWithContext(ctx, BootSubject(id), nil)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, nats.ErrNoResponders):
		return false, nil
	}
	return true, fmt.Errorf("store: is boot %s alive: %w", id, err)
}

// Dead returns the boots of r's open runs, other than this store's own,
// that are known to be dead (Alive says so without error).
func (s *Store) Dead(ctx context.Context, r Runs) map[string]bool {
	var dead map[string]bool
	for _, run := range r.Open {
		if run.Boot == s.boot || dead[run.Boot] {
			continue
		}
		if alive, err := s.Alive(ctx, run.Boot); err == nil && !alive {
			if dead == nil {
				dead = map[string]bool{}
			}
			dead[run.Boot] = true
		}
	}
	return dead
}

// Run is one start of a job by a host boot.
type Run struct {
	Boot string    `json:"boot"`
	Host string    `json:"host,omitempty"` // the host's name (os.Hostname), for the operator
	At   time.Time `json:"at"`
}

// Runs is the crash accounting of one job (a plan step; a task or a
// delivery can keep one the same way), stored in the job's own record and
// changed in the same revision-checked writes as the job's state:
//
//   - Start before running the job (Open then holds this boot's run);
//   - End when the attempt ends in any way this boot sees: completed,
//     failed, waiting for a retry, handed back at shutdown;
//   - at each later delivery, Settle with Store.Dead: a run still open
//     whose boot is dead was running when its host died, and moves to
//     Crashed;
//   - once Crashes reaches the limit, the job is quarantined: it ends
//     with reason quarantined instead of running again.
//
// A redelivery while the job's host lives (a retry, a missed ack deadline,
// a job handed back after a store hiccup) never counts: its boot answers.
// A run whose death is not yet known (its boot still answers, e.g. a host
// cut off from NATS for less than the server's ping timeout) stays open and
// is settled at a later delivery. Open holds at most one run per boot and
// Crashed grows by one per host death, so both stay small.
type Runs struct {
	Open    []Run `json:"open,omitempty"`
	Crashed []Run `json:"crashed,omitempty"`
}

// Start records a start of the job (Store.Run), replacing an open run of
// the same boot.
func (r *Runs) Start(run Run) {
	r.End(run.Boot)
	r.Open = append(r.Open, run)
}

// End records that boot's run ended.
func (r *Runs) End(boot string) {
	r.Open = slices.DeleteFunc(r.Open, func(x Run) bool { return x.Boot == boot })
	if len(r.Open) == 0 {
		r.Open = nil
	}
}

// Settle moves the open runs whose boot is dead to Crashed and reports
// whether it moved any.
func (r *Runs) Settle(dead map[string]bool) bool {
	moved := false
	r.Open = slices.DeleteFunc(r.Open, func(x Run) bool {
		if dead[x.Boot] {
			r.Crashed, moved = append(r.Crashed, x), true
			return true
		}
		return false
	})
	if len(r.Open) == 0 {
		r.Open = nil
	}
	return moved
}

// Crashes is how often the job was running when its host died.
func (r Runs) Crashes() int { return len(r.Crashed) }

// Boots lists the boots of the crashed runs, oldest first.
func (r Runs) Boots() []string {
	out := make([]string, len(r.Crashed))
	for i, x := range r.Crashed {
		out[i] = x.Boot
	}
	return out
}

// Hosts lists the host names of the crashed runs, oldest first ("" where
// unknown).
func (r Runs) Hosts() []string {
	out := make([]string, len(r.Crashed))
	for i, x := range r.Crashed {
		out[i] = x.Host
	}
	return out
}
