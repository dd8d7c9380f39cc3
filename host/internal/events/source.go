package events

import (
	"context"
	"strconv"
	"strings"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Sessions checks sessions (*store.Store).
type Sessions interface {
	OwnedSession(ctx context.Context, id string, owns func(owner string) bool) (store.Session, error)
}

// Query is what a subscriber asks for (GET /events).
type Query struct {
	SessionID   string // ?session_id=; "" = every event of the subscriber's own
	PlanID      string // ?plan_id= (with session_id)
	LastEventID string // Last-Event-ID header or ?last_event_id=: resume after it; "0" replays what is retained
}

// Source opens subscriptions for subscribers: it checks the query and the
// session, then subscribes.
type Source struct {
	Bus      *Bus
	Sessions Sessions
}

// Open validates q and opens its subscription for the principal of ctx
// (auth.From), which sees only what it owns: a session of another owner is
// SessionNotFound, as an unknown or closed one; without a session the
// subscription carries the events of every session (and notification) of
// its own. A session token may subscribe to its own session only
// (Forbidden). A malformed query is InvalidParams. A key holds at most its
// share of the host's subscriptions (key_quota), its tokens' included.
func (s Source) Open(ctx context.Context, q Query) (*SSEStream, error) {
	who := auth.From(ctx)
	if who.Kind() == auth.KindNone {
		return nil, fault.New(fault.Unauthorized, fault.ReasonUnauthenticated, "GET /events needs a credential")
	}
	if tok := who.Session(); tok != "" && q.SessionID != tok {
		return nil, fault.New(fault.Forbidden, fault.ReasonScopeDenied,
			"a session token may subscribe to the events of its own session only: add ?session_id="+tok).With("key_id", who.KeyID())
	}
	f := Filter{SessionID: q.SessionID, PlanID: q.PlanID}
	if q.PlanID != "" && q.SessionID == "" {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "plan_id needs session_id (plans belong to a session)").With("field", "plan_id")
	}
	if id := strings.TrimSpace(q.LastEventID); id != "" {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "Last-Event-ID must be an event id (a decimal number) from this stream").With("field", "last_event_id")
		}
		f.After, f.Replay = n, n == 0
	}
	if q.SessionID != "" {
		if _, err := s.Sessions.OwnedSession(ctx, q.SessionID, who.OwnsSession(q.SessionID)); err != nil {
			return nil, err
		}
	} else {
		f.Owners = []string{who.Owner()}
		if who.Owns("") { // records from before owners existed are the local principals'
			f.Owners = append(f.Owners, "")
		}
	}
	if who.Limited() { // an API key (its tokens too) holds its share; local principals count host-wide only
		f.Holder = who.Owner()
	}
	sub, err := s.Bus.Subscribe(ctx, f)
	if err != nil {
		return nil, err
	}
	return &SSEStream{sub: sub}, nil
}

// SSEStream is an open subscription rendered as Server-Sent Events frames.
type SSEStream struct{ sub *Subscription }

// Next returns the next event as one SSE frame.
func (s *SSEStream) Next(ctx context.Context) ([]byte, error) {
	ev, err := s.sub.Next(ctx)
	if err != nil {
		return nil, err
	}
	return ev.SSE(), nil
}

// Close ends the subscription.
func (s *SSEStream) Close() error { return s.sub.Close() }
