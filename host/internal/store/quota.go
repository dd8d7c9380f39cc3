package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
)

// Per-session quota accounting.
//
// Each session has a usage ledger: one record in the context bucket under
// "<session>.=" ("=" never occurs in unpadded base64url, so no context key
// can collide with it, and closing the session purges it together with the
// values). The ledger maps a hash of every context key the session holds to
// an upper bound of the key's stored size and the time after which the
// server has removed it. Every set commits the ledger with a
// revision-checked update (so concurrent sets on one session serialize on
// it) before it writes the value, and writes the value only if the key's
// last stream sequence is still the one read before the ledger commit.
// Together these keep the invariant "ledger bound ≥ bytes stored under the
// key": a shrinking overwrite first commits the old, larger bound and lowers
// it only after its write landed and while no later set has touched the
// entry (its token is still in place). A failure at any point leaves the
// ledger over-counting, never under-counting; the over-count is repaired by
// the next set of that key, by the key's expiry or by closing the session.
//
// Expired entries are dropped when the ledger is next written: with
// per-message TTL (nats-server 2.11+) the server removes the value from
// disk about a second after it expires. Without it expired values stay on
// disk until read, so their entries are kept until overwritten.

const (
	// ledgerEntryMaxBytes bounds the JSON size of one ledger entry (hash,
	// bound, expiry, token, punctuation); config checks use it to keep a full
	// ledger within one record.
	ledgerEntryMaxBytes = 96
	// expiryGrace is added to an entry's expiry: the server's TTL counts from
	// when the write landed (rounded up to whole seconds).
	expiryGrace = 2 * time.Second
	// quotaRetries bounds the optimistic-concurrency loops of a set.
	quotaRetries = 64
)

// errBusy is the Contended error of the store's own buckets; callers turn
// it into busyErr with their session id.
var errBusy = errors.New("store: changed concurrently too often")

// ledger is a session's usage record.
type ledger struct {
	Keys map[string]ledgerEntry `json:"k"`
}

// ledgerEntry accounts for one context key.
type ledgerEntry struct {
	Bytes   int64  `json:"n"`           // upper bound of the stored size
	Expires int64  `json:"e,omitempty"` // unix second after which it is gone; 0: never
	Token   string `json:"t,omitempty"` // set while a shrinking write may settle the entry
}

// usageKey is the context-bucket key of a session's ledger.
func usageKey(id string) string { return contextPrefix(id) + "=" }

// ledgerKey is a context key's name in the ledger: 128 bits of its SHA-256.
func ledgerKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return enc.EncodeToString(sum[:16])
}

// laterExpiry is the later of two entry expiries (0 is never).
func laterExpiry(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

// usage is what a session holds according to a ledger.
func (l ledger) usage() (keys int, bytes int64) {
	for _, e := range l.Keys {
		bytes += e.Bytes
	}
	return len(l.Keys), bytes
}

// readLedger returns a session's ledger (empty when it has none).
func (s *Store) readLedger(ctx context.Context, sessionID string) (ledger, error) {
	e, err := s.ledgers.Get(ctx, usageKey(sessionID))
	if errors.Is(err, ErrNotFound) {
		return ledger{Keys: map[string]ledgerEntry{}}, nil
	}
	if err != nil {
		return ledger{}, err
	}
	if e.Value.Keys == nil {
		e.Value.Keys = map[string]ledgerEntry{}
	}
	return *e.Value, nil
}

// dropExpired removes the entries whose values the server has removed
// (only with per-message TTL: without it they stay on disk until read).
func (s *Store) dropExpired(l *ledger) {
	if !s.keyTTL {
		return
	}
	now := time.Now().Unix()
	for k, e := range l.Keys {
		if e.Expires != 0 && now >= e.Expires {
			delete(l.Keys, k)
		}
	}
}

// reservation is a committed ledger entry for a write about to happen.
type reservation struct {
	lkey    string
	bytes   int64 // the write's size
	expires int64 // the write's entry expiry
	token   string
}

// reserve commits to the session's ledger a bound for writing size bytes
// under key with the given entry expiry, or returns a session_quota fault.
// The bound is the larger of the old and new sizes and the later expiry, so
// it covers whichever of the two ends up stored.
func (s *Store) reserve(ctx context.Context, sessionID, key string, size, expires int64) (reservation, error) {
	r := reservation{lkey: ledgerKey(key), bytes: size, expires: expires}
	_, err := s.ledgers.Change(ctx, usageKey(sessionID), Change[ledger]{Upsert: true, Apply: func(l *ledger) error {
		if l.Keys == nil {
			l.Keys = map[string]ledgerEntry{}
		}
		s.dropExpired(l)
		old, had := l.Keys[r.lkey]
		keys, total := l.usage()
		if !had && keys+1 > s.cfg.MaxKeysPerSession {
			return s.quotaErr(sessionID, key, "store.max_keys_per_session", int64(s.cfg.MaxKeysPerSession),
				fmt.Sprintf("the session already holds %d context values", keys))
		}
		next := ledgerEntry{Bytes: max(old.Bytes, size), Expires: expires}
		if had {
			next.Expires = laterExpiry(old.Expires, expires)
		}
		if total-old.Bytes+next.Bytes > int64(s.cfg.MaxSessionBytes) {
			return s.quotaErr(sessionID, key, "store.max_session_bytes", int64(s.cfg.MaxSessionBytes),
				fmt.Sprintf("the session holds %d bytes of context; this %d-byte value does not fit", total-old.Bytes, size))
		}
		r.token = ""
		if next.Bytes != size || next.Expires != expires {
			r.token = newToken()
			next.Token = r.token
		}
		l.Keys[r.lkey] = next
		return nil
	}})
	if errors.Is(err, errBusy) {
		return r, busyErr(sessionID)
	}
	return r, err
}

// settle lowers a reservation's bound to the size actually written once the
// write has landed, unless another set has committed to the entry since.
// Failure leaves an over-count and is only logged.
func (s *Store) settle(ctx context.Context, sessionID string, r reservation) {
	if r.token == "" {
		return
	}
	_, err := s.ledgers.Change(ctx, usageKey(sessionID), Change[ledger]{Apply: func(l *ledger) error {
		if e, ok := l.Keys[r.lkey]; !ok || e.Token != r.token {
			return ErrUnchanged // a later set owns the entry
		}
		l.Keys[r.lkey] = ledgerEntry{Bytes: r.bytes, Expires: r.expires}
		return nil
	}})
	if err != nil {
		s.log.Debug("store: usage ledger not settled", "session_id", sessionID, "err", err)
	}
}

// ContextUsage reports how many context values an active session holds and
// their total bytes (key plus compacted JSON value each), as counted against
// MaxKeysPerSession and MaxSessionBytes. It may over-count briefly: values
// being written, and expired values the server has not removed yet.
func (s *Store) ContextUsage(ctx context.Context, sessionID string) (keys int, bytes int64, err error) {
	if f := checkSessionID(sessionID); f != nil {
		return 0, 0, f
	}
	if err := s.requireActive(ctx, sessionID); err != nil {
		return 0, 0, err
	}
	l, err := s.readLedger(ctx, sessionID)
	if err != nil {
		return 0, 0, storeErr(err, sessionID, "context usage")
	}
	s.dropExpired(&l)
	keys, bytes = l.usage()
	return keys, bytes, nil
}

// newToken is a random token identifying one write's ledger commit.
func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return enc.EncodeToString(b[:])
}

// isWrongLastSeq reports whether err is JetStream's "wrong last sequence"
// (an optimistic-concurrency conflict).
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

func (s *Store) quotaErr(sessionID, key, limit string, value int64, msg string) *fault.Error {
	return withSession(fault.New(fault.ResourceExhausted, fault.ReasonSessionQuota, msg+": over "+limit).
		With("limit", limit).With("limit_value", value).With("context_key", key), sessionID)
}

func busyErr(sessionID string) *fault.Error {
	return withSession(fault.New(fault.Internal, fault.ReasonInternal,
		"the session's context changed concurrently too often; retry"), sessionID)
}
