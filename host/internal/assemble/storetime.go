package assemble

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/store"
)

// storeTimers are the latency series of the session and context
// operations, resolved once.
type storeTimers struct {
	create, get, close, setContext, getContext, owned, usage metrics.Timer
}

func newStoreTimers(m *metrics.Metrics) *storeTimers {
	return &storeTimers{
		create: m.StoreOp("session_create"), get: m.StoreOp("session_get"), close: m.StoreOp("session_close"),
		setContext: m.StoreOp("context_set"), getContext: m.StoreOp("context_get"),
		owned: m.StoreOp("owner_sessions"), usage: m.StoreOp("context_usage"),
	}
}

// timedSessions is the state store as the _cleveragents/* methods use it,
// each operation timed into skillhost_store_duration_seconds{op}.
type timedSessions struct {
	*store.Store
	t *storeTimers
}

func (s timedSessions) CreateOwnedSession(ctx context.Context, in store.Session, maxOpen int) (store.Session, error) {
	defer s.t.create.Since(time.Now())
	return s.Store.CreateOwnedSession(ctx, in, maxOpen)
}

func (s timedSessions) OwnedSession(ctx context.Context, id string, owns func(string) bool) (store.Session, error) {
	defer s.t.get.Since(time.Now())
	return s.Store.OwnedSession(ctx, id, owns)
}

func (s timedSessions) CloseOwnedSession(ctx context.Context, id string, owns func(string) bool) (store.Session, error) {
	defer s.t.close.Since(time.Now())
	return s.Store.CloseOwnedSession(ctx, id, owns)
}

func (s timedSessions) SetContext(ctx context.Context, sessionID, key string, value json.RawMessage, ttl time.Duration) (store.ContextEntry, error) {
	defer s.t.setContext.Since(time.Now())
	return s.Store.SetContext(ctx, sessionID, key, value, ttl)
}

func (s timedSessions) GetContext(ctx context.Context, sessionID, key string) (store.ContextEntry, error) {
	defer s.t.getContext.Since(time.Now())
	return s.Store.GetContext(ctx, sessionID, key)
}

func (s timedSessions) OwnerSessions(ctx context.Context, owner string) ([]string, error) {
	defer s.t.owned.Since(time.Now())
	return s.Store.OwnerSessions(ctx, owner)
}

func (s timedSessions) ContextUsage(ctx context.Context, sessionID string) (int, int64, error) {
	defer s.t.usage.Since(time.Now())
	return s.Store.ContextUsage(ctx, sessionID)
}
