package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Per-owner usage of a shared bucket (tasks, plans).
//
// A Usage counts, for every owner (auth.Principal.Owner), how many records
// of one bucket it holds and an upper bound of their bytes, so that new
// work of a key at its quota is refused (key_quota) before it fills the
// bucket every key shares, and new work of any key is refused (storage_full)
// once the bucket has no room above a reserve kept for running work.
//
// Each owner has a ledger in the bucket skillhost_usage under
// "<name>.<hash of the owner>": record counts and bytes grouped by the time
// after which the accounted bucket has removed them (its TTL counts from a
// record's last write). A group whose time has passed is dropped, which is
// how an expired record stops counting. Every record carries its Charge
// (bytes and group) next to its data, so the write that replaces it knows
// what the ledger holds for it. A write that changes the charge commits the
// new charge before it writes the record and removes the old one only after
// the write landed (revision-checked ledger updates, batched per owner on
// a host), so at every moment the ledger holds at least what is stored; a
// failure in between leaves an over-count until the charge expires, never an
// under-count. Work in progress (a running task, an executing plan) is
// charged its largest possible size until it ends, so a running task's
// completion always fits its owner's quota; the bucket's reserve keeps room
// for it in the bucket.

// UsageBucket is the KV bucket of the per-owner usage ledgers.
const UsageBucket = "skillhost_usage"

const (
	usageBucketBytes = 64 << 20
	usageMaxValue    = 64 << 10
	// usageGroups is about how many expiry groups one retention spans: a
	// ledger stays a few KiB whatever the owner holds.
	usageGroups   = 128
	usageMinGroup = time.Minute
	// usageGrace is added to a record's expiry: write latency and clock
	// differences between hosts and the NATS servers.
	usageGrace = 5 * time.Minute
	// RecordOverhead is what a stored record costs beyond its key and value
	// (the subject, headers, JetStream's per-message bytes), with room for
	// the record's Charge changing size.
	RecordOverhead = 256
	// settledRoom is the slack a settled record's charge keeps, so the
	// small writes that follow (a webhook's status) need no ledger change.
	settledRoom = 4 << 10
	// roomMaxAge is how long a read of the bucket's size is reused by
	// admissions on this host (plus what they admitted since).
	roomMaxAge = 250 * time.Millisecond
	// neverExpires is the group of records in a bucket without TTL.
	neverExpires = int64(1) << 62
)

var validUsageName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Charge is what one record holds in its owner's usage ledger; the record
// stores it. The zero Charge is a record nobody accounts for (created by an
// uncapped owner, or before accounting existed).
type Charge struct {
	Bytes int64 `json:"b"`
	Until int64 `json:"u"` // the record's group: the unix second after which it is gone
}

// IsZero reports whether c accounts for nothing.
func (c Charge) IsZero() bool { return c.Until == 0 }

// UsageConfig configures OpenUsage.
type UsageConfig struct {
	// Name is the ledger's namespace and the noun of refusals ("tasks").
	// Required: 1..32 of [a-z0-9_], starting with a letter.
	Name string
	// Bucket is the KV bucket whose records are accounted; its stream's
	// MaxBytes and MaxAge are read from JetStream. Required.
	Bucket string
	// MaxCount caps the records of one capped owner. Optional. Default: 0,
	// no cap.
	MaxCount int
	// MaxBytes caps the bytes of one capped owner's records. Optional.
	// Default: 0, no cap.
	MaxBytes int64
	// Reserve is the room in the bucket that new work leaves for the
	// growth of running work. Optional. Default: 0.
	Reserve int64
	// CountLimit, BytesLimit and ReserveLimit name the configuration keys
	// of MaxCount, MaxBytes and Reserve in refusals.
	CountLimit, BytesLimit, ReserveLimit string
	// Now is the clock. Optional. Default: time.Now.
	Now func() time.Time
}

// Usage accounts the records of one bucket per owner. It is safe for
// concurrent use, and every host of a cluster shares its ledgers.
type Usage struct {
	st     *Store
	kv     *Bucket[usageLedger]
	stream jetstream.Stream
	cfg    UsageConfig
	queues ledgerQueues // one owner's ledger updates on this host, a batch at a time (usage_batch.go)

	retention atomic.Int64 // the bucket's MaxAge (0: none), as read last

	mu    sync.Mutex // the room check's view of the bucket (usage_admit.go)
	at    time.Time  // when used and limit were read
	used  int64      // the bucket's bytes then
	limit int64      // the bucket's MaxBytes (<= 0: unlimited)
	added int64      // bytes admitted on this host since
}

// OpenUsage binds (creating when missing) the usage bucket and the
// accounted bucket's stream.
func (s *Store) OpenUsage(ctx context.Context, cfg UsageConfig) (*Usage, error) {
	switch {
	case !validUsageName.MatchString(cfg.Name):
		return nil, fmt.Errorf("store: usage name %q: must be 1..32 of [a-z0-9_], starting with a letter", cfg.Name)
	case cfg.Bucket == "":
		return nil, errors.New("store: usage needs the accounted bucket")
	case cfg.MaxCount < 0 || cfg.MaxBytes < 0 || cfg.Reserve < 0:
		return nil, fmt.Errorf("store: usage %s: negative limit", cfg.Name)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	kv, err := OpenBucket[usageLedger](ctx, s, BucketConfig{
		Name: UsageBucket, Description: "skillhost per-owner usage of the task and plan buckets",
		MaxValueBytes: usageMaxValue, MaxBytes: usageBucketBytes, What: "usage ledger",
		Retries: quotaRetries, Backoff: true, Contended: func(string) error { return errUsageBusy },
	})
	if err != nil {
		return nil, err
	}
	u := &Usage{st: s, kv: kv, cfg: cfg}
	err = s.Retry(ctx, "stream KV_"+cfg.Bucket, func(ctx context.Context) (err error) {
		u.stream, err = s.js.Stream(ctx, "KV_"+cfg.Bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: usage of bucket %s: %w", cfg.Bucket, err)
	}
	info := u.stream.CachedInfo()
	u.at, u.used = time.Now(), int64(info.State.Bytes)
	u.limit = info.Config.MaxBytes
	u.retention.Store(int64(info.Config.MaxAge))
	if u.limit > 0 && cfg.Reserve >= u.limit {
		return nil, fmt.Errorf("store: usage of bucket %s: reserve %d must be below the bucket's %d bytes", cfg.Bucket, cfg.Reserve, u.limit)
	}
	return u, nil
}

// until is the group of a record written at now.
func (u *Usage) until(now time.Time) int64 { return u.untilAfter(now, 0) }

// untilAfter is the group of a charge kept for keep after now (0: the
// bucket's retention, as for a record written at now).
func (u *Usage) untilAfter(now time.Time, keep time.Duration) int64 {
	ret := time.Duration(u.retention.Load())
	if ret <= 0 && keep <= 0 {
		return neverExpires
	}
	width := int64(max(ret/usageGroups, usageMinGroup) / time.Second)
	if keep <= 0 {
		keep = ret
	}
	t := now.Add(keep + usageGrace).Unix()
	return (t + width - 1) / width * width
}

// covers reports whether c still accounts for a record of size bytes
// written at now.
func (u *Usage) covers(c Charge, size int64, now time.Time) bool {
	ret := time.Duration(u.retention.Load())
	expires := neverExpires
	if ret > 0 {
		expires = now.Add(ret + usageGrace).Unix()
	}
	return c.Bytes >= size && c.Until >= expires
}

// Usage of one owner, as its ledger counts it.
type OwnerUsage struct {
	Records int64
	Bytes   int64
}

// Of returns what owner holds now (records being written and expired ones
// the ledger has not dropped yet may be counted).
func (u *Usage) Of(ctx context.Context, owner string) (OwnerUsage, error) {
	l, err := u.read(ctx, owner)
	if err != nil {
		return OwnerUsage{}, Fault(err, "read usage")
	}
	return l.total(u.cfg.Now().Unix()), nil
}

// usageLedger is one owner's ledger: records and bytes by group.
type usageLedger struct {
	Groups map[int64]usageGroup `json:"g"`
}

type usageGroup struct {
	Records int64 `json:"n"`
	Bytes   int64 `json:"b"`
}

// add adds (sign 1) or removes (-1) a charge; a group never goes negative.
func (l *usageLedger) add(c Charge, sign int64) { l.change(c, sign, sign*c.Bytes) }

// change adds records and bytes (either may be negative) to c's group.
func (l *usageLedger) change(c Charge, records, bytes int64) {
	if c.IsZero() {
		return
	}
	g, ok := l.Groups[c.Until]
	if !ok && records <= 0 && bytes <= 0 {
		return
	}
	g.Records = max(0, g.Records+records)
	g.Bytes = max(0, g.Bytes+bytes)
	if g.Records == 0 && g.Bytes == 0 {
		delete(l.Groups, c.Until)
		return
	}
	l.Groups[c.Until] = g
}

// move charges next to a record charged prev (zero for a new record)
// while its write is in flight. Within one group the record stays one
// record there, only next's bytes are added (concurrent writers of one
// record then never leave it counted twice); across groups the record is
// counted in both until settle or unmove.
func (l *usageLedger) move(prev, next Charge) {
	if !prev.IsZero() && prev.Until == next.Until {
		l.change(next, 0, next.Bytes)
		return
	}
	l.add(next, 1)
}

// settle ends a move after the write landed: prev is gone.
func (l *usageLedger) settle(prev, next Charge) {
	if prev.Until == next.Until {
		l.change(prev, 0, -prev.Bytes)
		return
	}
	l.add(prev, -1)
}

// unmove undoes a move whose write did not land: next is gone.
func (l *usageLedger) unmove(prev, next Charge) {
	if !prev.IsZero() && prev.Until == next.Until {
		l.change(next, 0, -next.Bytes)
		return
	}
	l.add(next, -1)
}

// prune drops the groups whose records are gone by now.
func (l *usageLedger) prune(now int64) {
	for until := range l.Groups {
		if until < now {
			delete(l.Groups, until)
		}
	}
}

func (l *usageLedger) total(now int64) OwnerUsage {
	var t OwnerUsage
	for until, g := range l.Groups {
		if until >= now {
			t.Records += g.Records
			t.Bytes += g.Bytes
		}
	}
	return t
}

// key is owner's ledger key: 128 bits of the owner's SHA-256.
func (u *Usage) key(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return u.cfg.Name + "." + hex.EncodeToString(sum[:16])
}

func (u *Usage) read(ctx context.Context, owner string) (usageLedger, error) {
	e, err := u.kv.Get(ctx, u.key(owner))
	if errors.Is(err, ErrNotFound) {
		return usageLedger{Groups: map[int64]usageGroup{}}, nil
	}
	if err != nil {
		return usageLedger{}, err
	}
	if e.Value.Groups == nil {
		e.Value.Groups = map[int64]usageGroup{}
	}
	return *e.Value, nil
}

var errUsageBusy = errors.New("store: usage ledger changed concurrently too often")

// Conflict reports whether a KV write failed its revision check (or found
// the key it meant to create): it did not land.
func Conflict(err error) bool {
	return err != nil && (errors.Is(err, jetstream.ErrKeyExists) || isWrongLastSeq(err) ||
		errors.Is(err, ErrConflict) || errors.Is(err, ErrExists))
}
