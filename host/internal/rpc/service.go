package rpc

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/agents"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/notify"
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
	CreateOwnedSession(ctx context.Context, in store.Session, maxOpen int) (store.Session, error)
	OwnedSession(ctx context.Context, id string, owns func(owner string) bool) (store.Session, error)
	CloseOwnedSession(ctx context.Context, id string, owns func(owner string) bool) (store.Session, error)
	SetContext(ctx context.Context, sessionID, key string, value json.RawMessage, ttl time.Duration) (store.ContextEntry, error)
	GetContext(ctx context.Context, sessionID, key string) (store.ContextEntry, error)
	OwnerSessions(ctx context.Context, owner string) ([]string, error)
	ContextUsage(ctx context.Context, sessionID string) (keys int, bytes int64, err error)
}

// Skills runs skills (*plugin.Registry).
type Skills interface {
	Execute(ctx context.Context, call plugin.Call) (*plugin.Outcome, error)
}

// Notifier records and delivers agent/notify notifications (*notify.Service).
type Notifier interface {
	Notify(ctx context.Context, n notify.Notification) (*notify.Result, error)
}

// Agents routes agent/call to a plugin or a remote agent (*agents.Router).
type Agents interface {
	Call(ctx context.Context, c agents.Call) (*agents.Result, error)
}

// Deps are the collaborators of a Service.
type Deps struct {
	Sessions Sessions
	Skills   Skills
	// Agents routes agent/call. Required.
	Agents Agents
	// Guard applies the per-key session-creation rate. Required.
	Guard *auth.Guard
	// MaxSessionBytes is the store's per-session context cap; with it the
	// per-key context cap is only summed up when open sessions could
	// exceed it. Optional. Default: 0 (always summed).
	MaxSessionBytes int64
	// Notifier handles agent/notify. Optional. Default: none (notifications
	// are only logged).
	Notifier Notifier
	Logger   *slog.Logger // Optional. Default: slog.Default().
}

// Service serves the `_cleveragents/*` methods. Every method acts for the
// principal of its context (auth.From): sessions are the principal's own.
type Service struct {
	sessions        Sessions
	skills          Skills
	agents          Agents
	guard           *auth.Guard
	maxSessionBytes int64
	notifier        Notifier
	log             *slog.Logger
	keyLocks        keyLocks
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Service{sessions: d.Sessions, skills: d.Skills, agents: d.Agents, guard: d.Guard, maxSessionBytes: d.MaxSessionBytes,
		notifier: d.Notifier, log: d.Logger, keyLocks: keyLocks{m: map[string]*sync.Mutex{}}}
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

// requireSession checks that id names an active session of the caller's
// principal (another principal's session is not found).
func (s *Service) requireSession(ctx context.Context, id string) error {
	if id == "" {
		return fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "session_id is required; create one with "+MethodSessionCreate)
	}
	_, err := s.sessions.OwnedSession(ctx, id, auth.From(ctx).OwnsSession(id))
	return err
}

// keyLocks serializes the per-key context cap check of one key's sets on
// this host. Its map is bounded by the configured keys.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (k *keyLocks) lock(owner string) func() {
	k.mu.Lock()
	l := k.m[owner]
	if l == nil {
		l = &sync.Mutex{}
		k.m[owner] = l
	}
	k.mu.Unlock()
	l.Lock()
	return l.Unlock
}
