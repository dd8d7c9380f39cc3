package a2a

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
)

// A2A contexts are sessions. The first message of a contextId (per
// principal) creates a session owned by the caller; every later message of
// that contextId runs its skill in the same session, so the context host
// functions (context_get/context_set) see what earlier messages wrote, as
// they do under _cleveragents/skill/execute. A context unused for
// ContextIdle is closed (its session too) by a sweep every host runs; a
// message after that starts a fresh session.
const (
	// ContextsBucket maps (owner, contextId) to a session.
	ContextsBucket = "skillhost_a2a_contexts"
	// ContextAgentPrefix prefixes the agent_id of a context's session.
	ContextAgentPrefix = "a2a-context:"
)

// contextRecord is one context's mapping.
type contextRecord struct {
	SessionID string    `json:"session_id"`
	Owner     string    `json:"owner"`
	ContextID string    `json:"context_id"`
	Touched   time.Time `json:"touched"`
}

// Contexts maps A2A contexts to sessions (see ContextsBucket). It is safe
// for concurrent use. Open it with OpenContexts; Run sweeps idle ones.
type Contexts struct {
	st   *store.Store
	kv   *store.Bucket[contextRecord]
	idle time.Duration
	log  *slog.Logger
}

// OpenContexts creates or binds the contexts bucket on st; idle
// (a2a.context_idle) closes a context unused that long.
func OpenContexts(ctx context.Context, st *store.Store, idle time.Duration, log *slog.Logger) (*Contexts, error) {
	if log == nil {
		log = slog.Default()
	}
	if idle <= 0 {
		return nil, fmt.Errorf("a2a: a2a.context_idle %v: must be positive", idle)
	}
	kv, err := store.OpenBucket[contextRecord](ctx, st, store.BucketConfig{
		Name: ContextsBucket, Description: "skillhost A2A contexts (contextId → session)",
		TTL: idle + time.Hour, MaxValueBytes: 4 << 10, What: "A2A context",
	})
	if err != nil {
		return nil, fmt.Errorf("a2a: contexts bucket: %w", err)
	}
	return &Contexts{st: st, kv: kv, idle: idle, log: log}, nil
}

func contextKey(owner, contextID string) string {
	return hashToken("ctx:" + owner + "\x00" + contextID)
}

// session returns the session of who's context contextID, creating it
// (and the mapping) on first use and refreshing its idle timer.
func (c *Contexts) session(ctx context.Context, who auth.Principal, contextID string, maxOpen int) (string, error) {
	owner := who.Owner()
	key := contextKey(owner, contextID)
	for range 3 {
		e, err := c.kv.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			id, err := c.create(ctx, who, key, contextID, maxOpen)
			if errors.Is(err, store.ErrExists) {
				continue // another message of the context won the race
			}
			return id, err
		case errors.Is(err, store.ErrUndecodable):
			_ = c.kv.Delete(ctx, key, e.Revision)
			continue
		case err != nil:
			return "", err
		}
		rec := e.Value
		if rec.Owner != owner {
			_ = c.kv.Delete(ctx, key, e.Revision)
			continue
		}
		if _, err := c.st.OwnedSession(ctx, rec.SessionID, who.Owns); err != nil {
			// closed by its owner (session/close) or expired: start anew
			_ = c.kv.Delete(ctx, key, e.Revision)
			continue
		}
		if time.Since(rec.Touched) > c.idle/8 { // refresh, at most a few writes per idle period
			rec.Touched = time.Now().UTC()
			_, _ = c.kv.Replace(ctx, key, rec, e.Revision) // lost to a concurrent refresh: fine
		}
		return rec.SessionID, nil
	}
	return "", fault.New(fault.Internal, fault.ReasonInternal, "A2A context is changing too fast; retry")
}

func (c *Contexts) create(ctx context.Context, who auth.Principal, key, contextID string, maxOpen int) (string, error) {
	sess, err := c.st.CreateOwnedSession(ctx, store.Session{Owner: who.Owner(), AgentID: truncate(ContextAgentPrefix+contextID, store.MaxAgentIDBytes-4)}, maxOpen)
	if err != nil {
		return "", err
	}
	_, err = c.kv.Create(ctx, key, &contextRecord{SessionID: sess.ID, Owner: who.Owner(), ContextID: contextID, Touched: time.Now().UTC()})
	if err != nil {
		_, _ = c.st.CloseSession(context.WithoutCancel(ctx), sess.ID)
		return "", err // store.ErrExists: the caller reads the winner's
	}
	return sess.ID, nil
}

// sweep closes the contexts (and sessions) idle for longer than the idle
// expiry; it returns how many it closed. Hosts sweep concurrently: a
// revision-checked delete lets one win, and a context used meanwhile stays.
func (c *Contexts) sweep(ctx context.Context) (int, error) {
	closed := 0
	for key, err := range c.kv.Keys(ctx, "") {
		if err != nil {
			return closed, err
		}
		e, err := c.kv.Get(ctx, key)
		if err != nil && !errors.Is(err, store.ErrUndecodable) {
			continue
		}
		var rec contextRecord
		if e.Value != nil {
			if time.Since(e.Value.Touched) <= c.idle {
				continue
			}
			rec = *e.Value
		}
		if c.kv.Delete(ctx, key, e.Revision) != nil {
			continue
		}
		if rec.SessionID != "" {
			if _, err := c.st.CloseSession(ctx, rec.SessionID); err != nil && !errors.Is(err, fault.ErrSessionNotFound) {
				c.log.Debug("a2a: closing an idle context's session", "session_id", rec.SessionID, "err", err)
			}
		}
		closed++
	}
	return closed, nil
}

// Run sweeps every idle/4 (at most every 10 minutes) until ctx ends.
func (c *Contexts) Run(ctx context.Context) {
	every := min(c.idle/4, 10*time.Minute)
	t := time.NewTicker(max(every, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := c.sweep(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("a2a: sweeping idle contexts", "err", err)
			} else if n > 0 {
				c.log.Info("a2a: idle contexts closed", "contexts", n, "idle", c.idle)
			}
		}
	}
}
