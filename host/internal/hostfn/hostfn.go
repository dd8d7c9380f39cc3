package hostfn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	extism "github.com/extism/go-sdk"
	"golang.org/x/time/rate"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
)

// ContextStore is the session context a plugin reads and writes; *store.Store
// implements it. Errors are *fault.Error (SessionNotFound for an unknown or
// closed session, InvalidParams with reason context_not_found or
// context_expired for a missing value).
type ContextStore interface {
	SetContext(ctx context.Context, sessionID, key string, value json.RawMessage, ttl time.Duration) (store.ContextEntry, error)
	GetContext(ctx context.Context, sessionID, key string) (store.ContextEntry, error)
}

// Deps are the host services the functions use. They are shared by every
// plugin.
type Deps struct {
	// Context backs context_get/context_set. Optional: nil answers
	// "unavailable".
	Context ContextStore
	// Logger receives plugin logs and host-function diagnostics. Optional.
	// Default: slog.Default().
	Logger *slog.Logger
	// Net is the operator's network policy for http_fetch.
	Net NetPolicy
	// Agents makes agent_call's calls. Optional: nil answers
	// "unavailable".
	Agents AgentCaller
}

// NetPolicy is the operator's policy for http_fetch (config keys net.*). It is
// never taken from a plugin manifest.
type NetPolicy struct {
	// AllowPrivate lists address ranges a plugin may reach even though they
	// are loopback, private, link-local or otherwise internal
	// (net.allow_private). Optional. Default: none.
	AllowPrivate []netip.Prefix
	// Timeout bounds one fetch, redirects included (net.timeout).
	// Required (NetPolicyOf sets it).
	Timeout time.Duration
	// MaxResponseBytes caps a response body; a larger body is an error
	// (net.max_response). Required (NetPolicyOf sets it).
	MaxResponseBytes int64
	// MaxRedirects caps the redirects followed, each re-checked
	// (net.max_redirects). 0 follows none.
	MaxRedirects int
	// Resolver resolves the hosts plugins fetch. Optional. Default: the
	// system's (net.DefaultResolver).
	Resolver *net.Resolver
}

// NetPolicyOf is the policy of the net.* section, its allow_private
// entries (an address or a CIDR prefix each) parsed.
func NetPolicyOf(n config.Net) (NetPolicy, error) {
	p := NetPolicy{Timeout: n.Timeout, MaxResponseBytes: int64(n.MaxResponse), MaxRedirects: n.MaxRedirects}
	for _, s := range n.AllowPrivate {
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			addr, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return p, fmt.Errorf("config net.allow_private: %q is not an address or CIDR prefix", s)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		p.AllowPrivate = append(p.AllowPrivate, prefix)
	}
	return p, nil
}

// checked is p with a negative MaxRedirects read as none.
func (p NetPolicy) checked() NetPolicy {
	p.MaxRedirects = max(p.MaxRedirects, 0)
	return p
}

// Grant is what one plugin's manifest permits.
type Grant struct {
	Plugin       string   // plugin name, for attribution and rate limits
	AllowedHosts []string // permissions.allowed_hosts: exact hosts or "*.suffix"
	Agents       []string // permissions.agents: agent ids with "*" wildcards
}

// funcs holds the state shared by one plugin's host functions.
type funcs struct {
	deps     Deps
	grant    Grant
	hosts    hostMatcher
	client   *fetcher
	logLimit *rate.Limiter // plugin log lines
	diag     *rate.Limiter // host diagnostics about this plugin (bad pointers…)
	progress *rate.Limiter // progress reports
	dropped  dropCounter   // log lines dropped by logLimit
}

// New returns the host functions for one plugin: log, progress, context_get,
// context_set, http_fetch, agent_call, task_history and task_interrupt, all
// in the "extism:host/user" namespace. Every Go plugin built with the SDK
// imports all eight, so give it
// all of them; a grant with no allowed hosts simply refuses every fetch, one
// with no agents every agent call. Invalid host
// patterns in the grant are logged and ignored (manifests are validated with
// ValidateHostPattern before they get here).
func New(deps Deps, grant Grant) []extism.HostFunction {
	f := newFuncs(deps, grant)
	return []extism.HostFunction{
		f.define("log", MaxLogRequest, f.log),
		f.define("progress", MaxProgressRequest, f.reportProgress),
		f.define("context_get", MaxContextRequest, f.contextGet),
		f.define("context_set", MaxContextRequest, f.contextSet),
		f.define("http_fetch", MaxFetchRequest, f.fetch),
		f.define("agent_call", MaxAgentCallRequest, f.agentCall),
		f.define("task_history", MaxHistoryRequest, f.taskHistory),
		f.define("task_interrupt", MaxInterruptRequest, f.taskInterrupt),
	}
}

// newFuncs builds the shared state of one plugin's host functions.
func newFuncs(deps Deps, grant Grant) *funcs {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	deps.Net = deps.Net.checked()
	f := &funcs{
		deps:     deps,
		grant:    grant,
		logLimit: rate.NewLimiter(LogRate, LogBurst),
		diag:     rate.NewLimiter(1, 5),
		progress: rate.NewLimiter(ProgressRate, ProgressBurst),
	}
	hosts, bad := newHostMatcher(grant.AllowedHosts)
	for _, b := range bad {
		deps.Logger.Warn("hostfn: ignoring invalid allowed host", "plugin", grant.Plugin, "pattern", b.pattern, "err", b.err)
	}
	f.hosts = hosts
	f.client = newFetcher(deps.Net, hosts)
	return f
}

// handler is one host function: it gets the decoded call and the request
// bytes and returns a result to encode or a guest error.
type handler func(ctx context.Context, call *Call, req []byte) (any, *guestError)

func (f *funcs) define(name string, limit int, h handler) extism.HostFunction {
	return extism.NewHostFunctionWithStack(name, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		stack[0] = f.serve(ctx, extismMemory{p}, name, limit, stack[0], h)
	}, []extism.ValueType{extism.ValueTypeI64}, []extism.ValueType{extism.ValueTypeI64})
}

// serve runs one host-function call: read and bound-check the request, run
// the handler, write the reply. It never panics; on failure to even write a
// reply it returns 0, which the SDK reports as "no reply".
func (f *funcs) serve(ctx context.Context, m memory, name string, limit int, offset uint64, h handler) (ret uint64) {
	call := CallFrom(ctx)
	defer func() {
		if r := recover(); r != nil {
			f.deps.Logger.ErrorContext(ctx, "hostfn: host function panicked", f.attrs(ctx, call, "function", name, "panic", r)...)
			ret = 0
		}
	}()
	req, gerr := readRequest(ctx, m, offset, limit)
	var result any
	if gerr == nil {
		result, gerr = h(ctx, call, req)
	}
	r := reply{OK: gerr == nil, Result: result, Error: gerr}
	if gerr != nil {
		f.diagnose(ctx, call, name, gerr)
	}
	off, err := writeReply(ctx, m, r)
	if err != nil {
		f.diagnose(ctx, call, name, errorf(fault.GuestInternal, "reply: %v", err))
		return 0
	}
	return off
}

// diagnose logs a refused host call at debug level, or at warn level for ABI
// misuse (bad pointers, oversized requests), rate-limited per plugin.
func (f *funcs) diagnose(ctx context.Context, call *Call, name string, gerr *guestError) {
	level := slog.LevelDebug
	switch gerr.Code {
	case fault.GuestBadPointer, fault.GuestRequestTooLarge, fault.GuestBadRequest, fault.GuestInternal,
		fault.GuestHostNotAllowed, fault.GuestAddressRefused, fault.GuestAgentNotAllowed:
		level = slog.LevelWarn
	}
	if level == slog.LevelWarn && !f.diag.Allow() {
		return
	}
	f.deps.Logger.Log(ctx, level, "hostfn: call refused",
		f.attrs(ctx, call, "function", name, "code", gerr.Code, "reason", gerr.Message)...)
}

// attrs returns the attribution of a call plus extra key/values.
func (f *funcs) attrs(ctx context.Context, call *Call, kv ...any) []any {
	a := []any{"plugin", f.grant.Plugin}
	if call.Skill != "" {
		a = append(a, "skill", call.Skill)
	}
	if id := call.sessionID(ctx); id != "" {
		a = append(a, "session_id", id)
	}
	if id := auth.InvocationFrom(ctx).RequestID; id != "" {
		a = append(a, "request_id", id)
	}
	return append(a, kv...)
}
