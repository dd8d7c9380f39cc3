package remote

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// closeTimeout bounds closing one evicted peer session.
const closeTimeout = 5 * time.Second

// maxClosing bounds the peer sessions being closed at once; past it an
// evicted session is left to the peer (it holds no more than its context).
const maxClosing = 4

// sessions maps the calling sessions of this host to sessions this host
// keeps open on one skillhost peer, so a peer plugin sees one session
// context per calling session and never another caller's. At most
// max_sessions are kept; the least recently used is closed on the peer.
// Calls without a session share one peer session. Safe for concurrent use.
type sessions struct {
	cache   *lru.Cache[string, string] // local session id -> peer session id
	flight  singleflight.Group
	closer  func(ctx context.Context, peerSession string)
	closing chan struct{} // slots of concurrent closes
	bg      context.Context
	wg      sync.WaitGroup
}

// newSessions returns a map of at most size entries; closer closes an
// evicted peer session (in the background, bounded, until bg ends).
func newSessions(bg context.Context, size int, closer func(ctx context.Context, peerSession string)) *sessions {
	s := &sessions{closer: closer, closing: make(chan struct{}, maxClosing), bg: bg}
	s.cache, _ = lru.NewWithEvict(max(size, 1), s.evicted) // only a size < 1 fails
	return s
}

// get returns the peer session for local, creating it with create on first
// use (concurrent first uses share one creation).
func (s *sessions) get(ctx context.Context, local string, create func(context.Context) (string, error)) (string, error) {
	if id, ok := s.cache.Get(local); ok {
		return id, nil
	}
	ch := s.flight.DoChan(local, func() (any, error) {
		if id, ok := s.cache.Get(local); ok {
			return id, nil
		}
		id, err := create(ctx)
		if err != nil {
			return "", err
		}
		s.cache.Add(local, id)
		return id, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// forget drops local's mapping when it still names peerSession (the peer
// no longer knows it).
func (s *sessions) forget(local, peerSession string) {
	if id, ok := s.cache.Peek(local); ok && id == peerSession {
		s.cache.Remove(local)
	}
}

// evicted closes a session pushed out of the map, when a close slot is
// free.
func (s *sessions) evicted(_ string, peerSession string) {
	if s.bg.Err() != nil {
		return
	}
	select {
	case s.closing <- struct{}{}:
	default:
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.closing }()
		ctx, cancel := context.WithTimeout(s.bg, closeTimeout)
		defer cancel()
		s.closer(ctx, peerSession)
	}()
}

// len is the number of peer sessions held.
func (s *sessions) len() int { return s.cache.Len() }

// wait waits for the closes under way.
func (s *sessions) wait() { s.wg.Wait() }
