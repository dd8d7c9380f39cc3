package rpc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/host/fault"
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
	sess, err := s.sessions.CreateSession(ctx, store.Session{ID: p.SessionID, AgentID: p.AgentID, Context: p.Context})
	if err != nil {
		return nil, err
	}
	return sessionResult{SessionID: sess.ID, CreatedAt: jsonrpc.Timestamp(sess.CreatedAt), Status: sess.Status}, nil
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
	sess, err := s.sessions.CloseSession(ctx, p.SessionID)
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
