package store

import (
	"context"
	"sync"
	"time"
)

// Session gate cache. Every skill call, context read or write and session
// token checks that its session is active and whose it is; reading the
// record from JetStream each time (a request to the stream and a JSON
// decode) was a tenth of the host's CPU under load. Active sessions are
// therefore cached, and a close is never missed:
//
//   - Embedded, this host is the only writer of the sessions bucket (the
//     server has no listener and the data folder is locked), so a close
//     evicts the entry here, after its write is durable and before it
//     returns: a call that arrives after the close is acknowledged misses
//     the cache and reads the closed record. Entries live until then.
//   - On a NATS cluster another host may close the session. An entry is
//     then trusted for SessionLease, counted from before the read that
//     filled it, and CloseSession returns only SessionLease (plus a margin
//     for clock rates) after its write was acknowledged: by then every
//     host's entry, filled by a read that came before the write, has
//     expired, so no host accepts a call for the session once its close is
//     acknowledged. This needs no membership and no acknowledgements from
//     other hosts, holds through partitions (a host cut off from NATS
//     cannot renew its entries either), and costs one read per session per
//     host per lease.
//
// Only active sessions are cached: a closed or missing one is read each
// time (its id may be reused once the closed record expires). A fill that
// started before an eviction (of any session) is not stored.

// DefaultSessionLease is how long a host trusts a cached active session on
// a NATS cluster, and how long a close waits before it returns there.
const DefaultSessionLease = 250 * time.Millisecond

// leaseMargin covers the rate difference of two hosts' clocks over a lease.
const leaseMargin = 5 * time.Millisecond

// maxCachedSessions bounds the cache; past it an arbitrary entry is
// dropped for each new one.
const maxCachedSessions = 100_000

// sessionCache holds active sessions (without their initial context). It
// is safe for concurrent use.
type sessionCache struct {
	lease time.Duration // 0: entries never expire (embedded)

	mu      sync.Mutex
	entries map[string]cachedSession
	epoch   uint64 // incremented by every eviction
}

type cachedSession struct {
	sess  Session
	until time.Time // zero: no expiry
}

func newSessionCache(lease time.Duration) *sessionCache {
	return &sessionCache{lease: lease, entries: map[string]cachedSession{}}
}

// get returns the cached active session with id, if it is still valid.
func (c *sessionCache) get(id string) (Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		return Session{}, false
	}
	if !e.until.IsZero() && !time.Now().Before(e.until) {
		delete(c.entries, id)
		return Session{}, false
	}
	return e.sess, true
}

// begin is called before the read that may fill the cache: it returns the
// read's start time and the epoch to give to put.
func (c *sessionCache) begin() (time.Time, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now(), c.epoch
}

// put caches sess, read by a read that began at start in epoch, unless an
// eviction happened since or the session is not active.
func (c *sessionCache) put(sess Session, start time.Time, epoch uint64) {
	if sess.Status != StatusActive {
		return
	}
	e := cachedSession{sess: sess}
	if c.lease > 0 {
		e.until = start.Add(c.lease)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	if _, ok := c.entries[sess.ID]; !ok && len(c.entries) >= maxCachedSessions {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[sess.ID] = e
}

// evict forgets id; a fill in flight is not stored.
func (c *sessionCache) evict(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
	c.epoch++
}

// waitOutLeases blocks until every other host's entry for a session whose
// close was acknowledged at acked has expired (no wait when embedded).
func (c *sessionCache) waitOutLeases(ctx context.Context, acked time.Time) {
	if c.lease == 0 {
		return
	}
	t := time.NewTimer(time.Until(acked.Add(c.lease + leaseMargin)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// CachedSession returns the session with id, whatever its status, without
// its initial context (Session.Context); an active one may come from the
// session cache. A missing session is SessionNotFound.
func (s *Store) CachedSession(ctx context.Context, id string) (Session, error) {
	if f := checkSessionID(id); f != nil {
		return Session{}, f
	}
	if sess, ok := s.cache.get(id); ok {
		return sess, nil
	}
	start, epoch := s.cache.begin()
	sess, _, err := s.getSession(ctx, id)
	if err != nil {
		return Session{}, err
	}
	sess.Context = nil
	s.cache.put(sess, start, epoch)
	return sess, nil
}

// requireActive fails unless the session with id is active (the session
// cache's answer when it has one): the gate of context reads and writes.
func (s *Store) requireActive(ctx context.Context, id string) error {
	sess, err := s.CachedSession(ctx, id)
	if err != nil {
		return err
	}
	if sess.Status != StatusActive {
		return closedErr(id)
	}
	return nil
}
