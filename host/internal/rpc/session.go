package rpc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/store"
)

type sessionCreateParams struct {
	SessionID string          `json:"session_id"`
	AgentID   string          `json:"agent_id"`
	Context   json.RawMessage `json:"context"`
}

type sessionResult struct {
	SessionID string `json:"session_id"`
	// Token is the session token (API-key callers only): a credential
	// valid for this session's methods until it is closed.
	Token     string `json:"session_token,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	ClosedAt  string `json:"closed_at,omitempty"`
	Status    string `json:"status"`
}

func (s *Service) sessionCreate(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p sessionCreateParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if len(p.Context) > 0 && p.Context[0] != '{' && string(p.Context) != "null" {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "context must be an object")
	}
	who := auth.From(ctx)
	if err := s.guard.AdmitSession(who); err != nil {
		return nil, err
	}
	in := store.Session{ID: p.SessionID, AgentID: p.AgentID, Context: p.Context, Owner: who.Owner()}
	if in.ID == "" {
		in.ID = store.NewSessionID()
	}
	var token string
	if who.Kind() == auth.KindKey {
		token, in.TokenSHA256 = auth.NewToken(in.ID)
	}
	sess, err := s.sessions.CreateOwnedSession(ctx, in, who.Limits().MaxOpenSessions)
	if err != nil {
		return nil, err
	}
	return sessionResult{SessionID: sess.ID, Token: token, CreatedAt: jsonrpc.Timestamp(sess.CreatedAt), Status: sess.Status}, nil
}

type sessionCloseParams struct {
	SessionID string `json:"session_id"`
}

func (s *Service) sessionClose(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p sessionCloseParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "session_id is required")
	}
	sess, err := s.sessions.CloseOwnedSession(ctx, p.SessionID, auth.From(ctx).OwnsSession(p.SessionID))
	if err != nil {
		return nil, err
	}
	closed := time.Now()
	if sess.ClosedAt != nil {
		closed = *sess.ClosedAt
	}
	return sessionResult{SessionID: sess.ID, ClosedAt: jsonrpc.Timestamp(closed), Status: sess.Status}, nil
}

type contextGetParams struct {
	SessionID  string `json:"session_id"`
	ContextKey string `json:"context_key"`
}

type contextResult struct {
	ContextKey string          `json:"context_key"`
	Value      json.RawMessage `json:"value,omitempty"`
	Status     string          `json:"status,omitempty"`
	Timestamp  string          `json:"timestamp"`
	ExpiresAt  string          `json:"expires_at,omitempty"`
}

func (s *Service) contextGet(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p contextGetParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if err := s.requireSession(ctx, p.SessionID); err != nil {
		return nil, err
	}
	e, err := s.sessions.GetContext(ctx, p.SessionID, p.ContextKey)
	if err != nil {
		return nil, err
	}
	return contextResult{ContextKey: e.Key, Value: e.Value, Timestamp: jsonrpc.Timestamp(e.SetAt), ExpiresAt: expires(e.ExpiresAt)}, nil
}

type contextSetParams struct {
	SessionID  string          `json:"session_id"`
	ContextKey string          `json:"context_key"`
	Value      json.RawMessage `json:"value"`
	TTL        *float64        `json:"ttl"`
}

func (s *Service) contextSet(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p contextSetParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if err := s.requireSession(ctx, p.SessionID); err != nil {
		return nil, err
	}
	if len(p.Value) == 0 {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "value is required (any JSON value)")
	}
	var ttl time.Duration
	if p.TTL != nil {
		if *p.TTL < 0 || *p.TTL > maxTTLSeconds {
			return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "ttl must be a number of seconds >= 0 (0 = no expiry)")
		}
		ttl = time.Duration(*p.TTL * float64(time.Second))
	}
	if who := auth.From(ctx); who.Limits().MaxContextBytes > 0 {
		defer s.keyLocks.lock(who.Owner())()
		if err := s.checkKeyBytes(ctx, who, p.SessionID, int64(len(p.ContextKey)+len(p.Value))); err != nil {
			return nil, err
		}
	}
	e, err := s.sessions.SetContext(ctx, p.SessionID, p.ContextKey, p.Value, ttl)
	if err != nil {
		return nil, err
	}
	return contextResult{ContextKey: e.Key, Status: "set", Timestamp: jsonrpc.Timestamp(e.SetAt), ExpiresAt: expires(e.ExpiresAt)}, nil
}

// maxTTLSeconds keeps ttl conversions from overflowing; the store applies
// the operator's (smaller) store.max_context_ttl.
const maxTTLSeconds = 100 * 365 * 24 * 3600

// maxTimeoutMS is the largest call timeout accepted (a year, in ms): far
// above any skill limit, small enough to convert without overflow.
const maxTimeoutMS = 365 * 24 * 3600 * 1000

func expires(t *time.Time) string {
	if t == nil {
		return ""
	}
	return jsonrpc.Timestamp(*t)
}

// checkKeyBytes refuses (key_quota) a context value of size bytes that
// would take the context stored by all of who's open sessions over its
// MaxContextBytes. The sum is conservative (an overwrite counts in full)
// and skipped when the open-session cap times the per-session cap cannot
// exceed it. The caller holds the key's lock, so sets of one key on this
// host do not race past the cap.
func (s *Service) checkKeyBytes(ctx context.Context, who auth.Principal, sessionID string, size int64) error {
	lim := who.Limits()
	if lim.MaxOpenSessions > 0 && s.maxSessionBytes > 0 && int64(lim.MaxOpenSessions)*s.maxSessionBytes <= lim.MaxContextBytes {
		return nil
	}
	ids, err := s.sessions.OwnerSessions(ctx, who.Owner())
	if err != nil {
		return err
	}
	var used int64
	for _, id := range ids {
		_, n, err := s.sessions.ContextUsage(ctx, id)
		if err != nil {
			continue // closed meanwhile: holds nothing
		}
		used += n
	}
	if used+size > lim.MaxContextBytes {
		return fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"this key's sessions hold %d bytes of context; %d more bytes would pass its %d-byte cap", used, size, lim.MaxContextBytes).
			With("limit", "auth.limits.max_context_bytes").With("limit_value", lim.MaxContextBytes).With("session_id", sessionID)
	}
	return nil
}
