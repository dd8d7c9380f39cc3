package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Leases: the work a boot holds (an A2A task it runs) is named in a memory
// stream, one subject per lease, <Subject>.held.<boot>.<name>, and every
// boot beats on <Subject>.beat.<boot> (the stream keeps one message per
// subject). Any host lists who holds what with one request (the stream's
// subjects; no message is read), and a dropped lease leaves no tombstone (a
// purge by subject), so the stream holds what runs now and nothing else.
//
// A boot has lapsed — another host may take its leases — when
//
//   - it released them (Release: its last beat says so), or
//   - it is known dead: this store is embedded (one process owns the
//     server: every other boot is an earlier process), or it is the
//     previous boot of this host's data directory and NATS has no
//     responder for it, or
//   - its beat has not changed for TTL as this host watched it, and it
//     does not answer on its boot subject (a host cut off from NATS, or
//     gone).
//
// Clocks are never compared: a beat is observed by its stream sequence.
// A host that reconnects within TTL keeps its leases; one that answers but
// cannot beat (JetStream without quorum) keeps them too.
const (
	leaseHeld      = "held"
	leaseBeat      = "beat"
	hdrReleased    = "Skillhost-Released"
	leasesMaxBytes = 64 << 20
)

// LeasesConfig configures OpenLeases.
type LeasesConfig struct {
	// Name is the stream's name. Required.
	Name string
	// Subject is the stream's subject prefix (no wildcard). Required.
	Subject string
	// TTL is how long a boot's beat may stay unchanged before its leases
	// lapse (see Lapsed). Required.
	TTL time.Duration
	// MaxBytes caps the stream. Optional. Default: 64 MiB.
	MaxBytes int64
}

// Leases names the work boots hold, with their beats. It is safe for
// concurrent use.
type Leases struct {
	s      *Store
	cfg    LeasesConfig
	stream jetstream.Stream

	mu       sync.Mutex
	seen     map[string]*watched // other boots' beats as this host saw them
	released bool
}

// watched is another boot's beat: its sequence (0: none) and since when
// this host has seen it unchanged.
type watched struct {
	seq   uint64
	since time.Time
	asked time.Time
}

// OpenLeases creates or updates the leases stream of cfg.
func (s *Store) OpenLeases(ctx context.Context, cfg LeasesConfig) (*Leases, error) {
	if cfg.Name == "" || cfg.Subject == "" || cfg.TTL <= 0 || strings.ContainsAny(cfg.Subject, "*> ") {
		return nil, errors.New("store: OpenLeases needs a Name, a Subject without wildcards and a TTL")
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = leasesMaxBytes
	}
	st, err := s.Stream(ctx, jetstream.StreamConfig{
		Name:              cfg.Name,
		Description:       "skillhost leases: the work each host boot holds, and the boots' beats",
		Subjects:          []string{cfg.Subject + ".>"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.MemoryStorage,
		MaxMsgsPerSubject: 1,
		MaxBytes:          cfg.MaxBytes,
		Discard:           jetstream.DiscardNew,
	})
	if err != nil {
		return nil, err
	}
	return &Leases{s: s, cfg: cfg, stream: st, seen: map[string]*watched{}}, nil
}

// TTL is the configured TTL.
func (l *Leases) TTL() time.Duration { return l.cfg.TTL }

func (l *Leases) held(boot, name string) string {
	return l.cfg.Subject + "." + leaseHeld + "." + boot + "." + name
}

func (l *Leases) beat(boot string) string { return l.cfg.Subject + "." + leaseBeat + "." + boot }

// checkName refuses a name that is not one or more subject tokens.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "*> \t\r\n") || strings.HasPrefix(name, ".") ||
		strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return fmt.Errorf("store: lease name %q is not a dotted list of subject tokens", name)
	}
	return nil
}

// Beat records that this boot lives; it clears a Release.
func (l *Leases) Beat(ctx context.Context) error {
	l.mu.Lock()
	l.released = false
	l.mu.Unlock()
	if _, err := l.s.js.Publish(ctx, l.beat(l.s.boot), nil); err != nil {
		return Fault(err, "beat in "+l.cfg.Name)
	}
	return nil
}

// Release marks this boot's leases lapsed at once (a host handing its work
// back as it shuts down); the next Beat takes it back.
func (l *Leases) Release(ctx context.Context) error {
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	m := nats.NewMsg(l.beat(l.s.boot))
	m.Header.Set(hdrReleased, "1")
	if _, err := l.s.js.PublishMsg(ctx, m); err != nil {
		return Fault(err, "release in "+l.cfg.Name)
	}
	return nil
}

// Hold records that this boot holds name (durable when it returns).
func (l *Leases) Hold(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if _, err := l.s.js.Publish(ctx, l.held(l.s.boot, name), nil); err != nil {
		return Fault(err, "hold in "+l.cfg.Name)
	}
	return nil
}

// HoldNoWait is Hold without waiting for the stream (in order with the
// connection's other publishes).
func (l *Leases) HoldNoWait(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := l.s.nc.Publish(l.held(l.s.boot, name), nil); err != nil {
		return Fault(err, "hold in "+l.cfg.Name)
	}
	return nil
}

// Drop removes boot's lease on name (this boot's, or a lapsed one's).
func (l *Leases) Drop(ctx context.Context, boot, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(l.held(boot, name))); err != nil {
		return Fault(err, "drop in "+l.cfg.Name)
	}
	return nil
}

// Held lists the leases of every boot: boot → names.
func (l *Leases) Held(ctx context.Context) (map[string][]string, error) {
	prefix := l.cfg.Subject + "." + leaseHeld + "."
	info, err := l.stream.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, Fault(err, "list "+l.cfg.Name)
	}
	out := map[string][]string{}
	for subj := range info.State.Subjects {
		boot, name, ok := strings.Cut(strings.TrimPrefix(subj, prefix), ".")
		if ok && name != "" {
			out[boot] = append(out[boot], name)
		}
	}
	return out, nil
}

// Lapsed reports whether boot's leases may be taken (see the rules above).
// This boot lapses only by Release. An error means unknown: a caller must
// not take the leases.
func (l *Leases) Lapsed(ctx context.Context, boot string) (bool, error) {
	if boot == l.s.boot {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.released, nil
	}
	if l.s.srv != nil { // embedded: every other boot was an earlier process
		return true, nil
	}
	seq, released, err := l.lastBeat(ctx, boot)
	if err != nil {
		return false, err
	}
	if released {
		return true, nil
	}
	if boot == l.s.prev {
		if alive, err := l.s.Alive(ctx, boot); err == nil && !alive {
			return true, nil
		}
	}
	now := time.Now()
	l.mu.Lock()
	w := l.seen[boot]
	if w == nil || w.seq != seq {
		w = &watched{seq: seq, since: now}
		l.seen[boot] = w
	}
	w.asked = now
	stale := now.Sub(w.since) >= l.cfg.TTL
	l.prune(now)
	l.mu.Unlock()
	if !stale {
		return false, nil
	}
	alive, err := l.s.Alive(ctx, boot)
	return err != nil || !alive, nil
}

// prune forgets boots nobody asked about for a while; l.mu is held.
func (l *Leases) prune(now time.Time) {
	for b, w := range l.seen {
		if now.Sub(w.asked) > 10*l.cfg.TTL {
			delete(l.seen, b)
		}
	}
}

// lastBeat reads boot's latest beat: its sequence (0: none) and whether it
// released its leases.
func (l *Leases) lastBeat(ctx context.Context, boot string) (uint64, bool, error) {
	m, err := l.stream.GetLastMsgForSubject(ctx, l.beat(boot))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, Fault(err, "read "+l.cfg.Name)
	}
	return m.Sequence, m.Header.Get(hdrReleased) != "", nil
}
