package rpc

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Method names served by this package.
const (
	MethodSessionCreate = "_cleveragents/session/create"
	MethodSessionClose  = "_cleveragents/session/close"
	MethodContextGet    = "_cleveragents/context/get"
	MethodContextSet    = "_cleveragents/context/set"
	MethodSkillExecute  = "_cleveragents/skill/execute"
	MethodAgentCall     = "_cleveragents/agent/call"
	MethodAgentNotify   = "_cleveragents/agent/notify"
)

// Sessions is the part of the state store the methods use (*store.Store).
type Sessions interface {
	CreateSession(ctx context.Context, in store.Session) (store.Session, error)
	ActiveSession(ctx context.Context, id string) (store.Session, error)
	CloseSession(ctx context.Context, id string) (store.Session, error)
	SetContext(ctx context.Context, sessionID, key string, value json.RawMessage, ttl time.Duration) (store.ContextEntry, error)
	GetContext(ctx context.Context, sessionID, key string) (store.ContextEntry, error)
}

// Skills runs skills (*plugin.Registry).
type Skills interface {
	Execute(ctx context.Context, call plugin.Call) (*plugin.Outcome, error)
}

// Deps are the collaborators of a Service.
type Deps struct {
	Sessions Sessions
	Skills   Skills
	Logger   *slog.Logger // Optional. Default: slog.Default().
}

// Service serves the `_cleveragents/*` methods.
type Service struct {
	sessions Sessions
	skills   Skills
	log      *slog.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Service{sessions: d.Sessions, skills: d.Skills, log: d.Logger}
}

// Middleware wraps a handler, e.g. to record metrics.
type Middleware func(method string, h jsonrpc.Handler) jsonrpc.Handler

// Register adds every method to eng, each wrapped by mw when it is not nil.
func (s *Service) Register(eng *jsonrpc.Engine, mw Middleware) {
	for method, h := range map[string]jsonrpc.Handler{
		MethodSessionCreate: s.sessionCreate,
		MethodSessionClose:  s.sessionClose,
		MethodContextGet:    s.contextGet,
		MethodContextSet:    s.contextSet,
		MethodSkillExecute:  s.skillExecute,
		MethodAgentCall:     s.agentCall,
		MethodAgentNotify:   s.agentNotify,
	} {
		if mw != nil {
			h = mw(method, h)
		}
		eng.Register(method, h)
	}
}

// requireSession checks that id names an active session.
func (s *Service) requireSession(ctx context.Context, id string) error {
	if id == "" {
		return fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "session_id is required; create one with "+MethodSessionCreate)
	}
	_, err := s.sessions.ActiveSession(ctx, id)
	return err
}
