package auth

import (
	"context"
	"fmt"

	"github.com/skillhost/skillhost/host/fault"
)

// Kind says how a principal was established.
type Kind uint8

// The principal kinds.
const (
	KindNone  Kind = iota // no principal: every check refuses
	KindLocal             // a trusted local client: stdio, or loopback HTTP when no keys are configured
	KindKey               // an API key
	KindToken             // a session token, acting for the key that created its session
)

// Owner prefixes: what a principal creates is stored with its Owner.
const (
	ownerKeyPrefix   = "key:"
	ownerLocalPrefix = "local:"
)

// Principal is who a request acts for. The zero value is no principal,
// which every check refuses. Principals are values; copy them freely.
type Principal struct {
	kind    Kind
	name    string // key id, or the local principal's name
	session string // KindToken: the one session it may use
	scopes  []Scope
	limits  Limits
}

// Local returns the trusted local principal name ("stdio", "loopback"):
// every scope, no limits, its own sessions and tasks.
func Local(name string) Principal { return Principal{kind: KindLocal, name: name} }

func keyPrincipal(id string, scopes []Scope, limits Limits) Principal {
	return Principal{kind: KindKey, name: id, scopes: scopes, limits: limits}
}

// Kind is how the principal was established.
func (p Principal) Kind() Kind { return p.kind }

// KeyID is the API key's id (for a token: the key that created its
// session); "" for local principals.
func (p Principal) KeyID() string {
	if p.kind == KindKey || p.kind == KindToken {
		return p.name
	}
	return ""
}

// Session is the session a token principal is limited to ("" otherwise).
func (p Principal) Session() string { return p.session }

// Owner is the value stored with what the principal creates (sessions,
// plans, tasks): "key:<id>" for a key and its tokens, "local:<name>" for a
// local principal. Only the same owner sees them again.
func (p Principal) Owner() string {
	switch p.kind {
	case KindKey, KindToken:
		return ownerKeyPrefix + p.name
	case KindLocal:
		return ownerLocalPrefix + p.name
	}
	return ""
}

// Owns reports whether something stored with owner belongs to p. Records
// written before owners existed (owner "") belong to local principals: only
// loopback clients could create them then.
func (p Principal) Owns(owner string) bool {
	switch {
	case p.kind == KindNone:
		return false
	case owner == "":
		return p.kind == KindLocal
	}
	return owner == p.Owner()
}

// OwnsSession returns the ownership check of session id for p (what
// store.OwnedSession asks): p owns the session's owner and, for a session
// token, id is the token's own session. Handlers look sessions up with it,
// so a token reaches no other session of its key whatever its params say.
func (p Principal) OwnsSession(id string) func(owner string) bool {
	return func(owner string) bool {
		return p.Owns(owner) && (p.kind != KindToken || id == p.session)
	}
}

// AllowKeyWide reports (nil) whether p may act on what, records that belong
// to a key as a whole and to no session (A2A tasks and their push
// configs): every principal but a session token, which is refused 403
// scope_denied. The A2A service asks it wherever it reads, lists or
// creates tasks, so a token cannot reach them through any method or
// binding.
func (p Principal) AllowKeyWide(what string) error {
	if err := p.present(); err != nil {
		return err
	}
	if p.kind == KindToken {
		return fault.Newf(fault.Forbidden, fault.ReasonScopeDenied,
			"a session token may not use %s: they belong to the key, not to a session; use the API key", what).
			With("key_id", p.KeyID())
	}
	return nil
}

// Limits are the principal's caps; local principals have none (zero).
func (p Principal) Limits() Limits { return p.limits }

// Limited reports whether the per-principal limits apply.
func (p Principal) Limited() bool { return p.kind == KindKey || p.kind == KindToken }

// String names the principal for logs: "key ci", "token of key ci for
// session s1", "local stdio", "none".
func (p Principal) String() string {
	switch p.kind {
	case KindKey:
		return "key " + p.name
	case KindToken:
		return fmt.Sprintf("token of key %s for session %s", p.name, p.session)
	case KindLocal:
		return "local " + p.name
	}
	return "none"
}

// all reports whether p holds every scope.
func (p Principal) all() bool {
	if p.kind == KindLocal {
		return true
	}
	for _, s := range p.scopes {
		if s.Kind == ScopeAll {
			return true
		}
	}
	return false
}

func (p Principal) grants(kind ScopeKind, name string) bool {
	if p.all() {
		return true
	}
	for _, s := range p.scopes {
		if s.Kind == kind && Match(s.Glob, name) {
			return true
		}
	}
	return false
}

func (p Principal) has(kind ScopeKind) bool {
	if p.all() {
		return true
	}
	for _, s := range p.scopes {
		if s.Kind == kind {
			return true
		}
	}
	return false
}

// AllowSkill reports (nil) whether p may run skill of plugin: a skill: scope
// matching the skill id or an agent: scope matching the plugin name.
// plugin may be "" when unknown (then only skill: scopes count).
func (p Principal) AllowSkill(plugin, skill string) error {
	if err := p.present(); err != nil {
		return err
	}
	if p.grants(ScopeSkill, skill) || (plugin != "" && p.grants(ScopeAgent, plugin)) {
		return nil
	}
	return p.deny(fmt.Sprintf("skill %q", clip(skill)), "skill:"+clip(skill))
}

// AllowAgent reports (nil) whether p may call agent name (a plugin or a
// remote peer): an agent: scope matching it.
func (p Principal) AllowAgent(name string) error {
	if err := p.present(); err != nil {
		return err
	}
	if p.grants(ScopeAgent, name) {
		return nil
	}
	return p.deny(fmt.Sprintf("agent %q", clip(name)), "agent:"+clip(name))
}

// present is Unauthorized for the zero principal.
func (p Principal) present() error {
	if p.kind == KindNone {
		return fault.New(fault.Unauthorized, fault.ReasonUnauthenticated, "the request carries no credentials")
	}
	return nil
}

func (p Principal) deny(what, need string) *fault.Error {
	return fault.Newf(fault.Forbidden, fault.ReasonScopeDenied, "%s may not use %s (needs a scope such as %q)", p, what, need).
		With("key_id", p.KeyID()).With("required_scope", need)
}

// With returns a copy of ctx carrying p as the principal of its
// Invocation. Transports attach the principal of every request before
// dispatching it.
func With(ctx context.Context, p Principal) context.Context {
	v := lookup(ctx)
	v.inv.Principal, v.principal = p, true
	return context.WithValue(ctx, invocationKey{}, v)
}

// From returns the principal attached to ctx (InvocationFrom(ctx).Principal);
// the zero principal (which every check refuses) when there is none.
func From(ctx context.Context) Principal { return lookup(ctx).inv.Principal }

// Attached reports whether ctx carries a principal (With).
func Attached(ctx context.Context) bool { return lookup(ctx).principal }
