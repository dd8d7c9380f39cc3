package assemble

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/admin"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// observer watches the registry for the host: per-skill metrics, reload
// metrics, the failure ring, and the skill of each access line.
type observer struct {
	metrics  *metrics.Metrics
	failures *admin.Ring
	handles  sync.Map // *plugin.Skill → *metrics.SkillMetrics (skills of loaded revisions)
}

var _ plugin.Observer = (*observer)(nil)

// SkillCalled records one call of a loaded skill.
func (o *observer) SkillCalled(ctx context.Context, r plugin.CallReport) {
	sm, ok := o.handles.Load(r.Skill)
	if !ok {
		sm, _ = o.handles.LoadOrStore(r.Skill, o.metrics.Skill(r.Plugin.Manifest.Name, r.Skill.ID))
	}
	reason := ""
	if r.Err != nil {
		reason = r.Err.WireReason()
	}
	sm.(*metrics.SkillMetrics).Observe(r.Duration, reason)
	if reason == fault.ReasonRateLimited {
		if rule, ok := r.Err.Data["rule"].(string); ok { // a policy.skill_rates refusal
			per, _ := r.Err.Data["per"].(string)
			sm.(*metrics.SkillMetrics).RateLimited(rule, per)
		}
	}
	if r.Err == nil {
		return
	}
	// the method the call came in by, read from its invocation (the access
	// middleware leaves this failure to the ring: the error it gets back
	// says the skill was reached, plugin.Reached)
	f := failure(ctx, auth.InvocationFrom(ctx).Method, r.Err)
	f.Plugin, f.Skill = r.Plugin.Manifest.Name, r.Skill.ID
	o.failures.Add(f)
}

// PluginEvent counts a load event.
func (o *observer) PluginEvent(e plugin.LoadEvent) { o.metrics.PluginEvent(e.Plugin, string(e.Kind)) }

// plugins follows the loaded plugins: series and handles of skills that are
// no longer loaded are dropped.
func (o *observer) plugins(snap *plugin.Snapshot) {
	o.handles.Range(func(k, _ any) bool {
		sk := k.(*plugin.Skill)
		if _, cur, ok := snap.Skill(sk.ID); !ok || cur != sk {
			o.handles.Delete(k)
		}
		return true
	})
	o.metrics.Retain(func(name, skill string) bool {
		p, _, ok := snap.Skill(skill)
		return ok && p.Manifest.Name == name
	})
}

// failure describes a failed call for the ring.
func failure(ctx context.Context, method string, err error) admin.Failure {
	fe := fault.From(err)
	inv := auth.InvocationFrom(ctx)
	tr := jsonrpc.TransportFrom(ctx)
	return admin.Failure{Time: time.Now().UTC(), Method: method, Code: fe.Kind.Code(), Reason: fe.WireReason(),
		Message: fe.Message(), SessionID: hostfn.SessionOf(ctx), RequestID: inv.RequestID,
		KeyID: inv.Principal.KeyID(), Transport: tr.Name}
}

// access is the outermost engine middleware: it attaches the call's
// invocation (auth.Invoke: the envelope's session, the request id, the
// method; the transport attached the principal) — the one place a call's
// identity is put together — then writes one access line per call
// (log.access), the method's metrics, and failures that reached no skill
// into the ring. What the call reached is read from what it returned: a
// skill's failure says so (plugin.Reached; the observer recorded it), a
// result may name its skill (reacher).
func (h *Root) access(method string, next jsonrpc.Handler) jsonrpc.Handler {
	mm := h.metrics.Method(method)
	return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		start := time.Now()
		ctx = auth.Invoke(ctx, auth.Invocation{SessionID: req.Meta.SessionID, RequestID: jsonrpc.RequestID(ctx, req), Method: method})
		sctx, endSpan := h.startSpan(ctx, method)
		res, err := next(sctx, req)
		d := time.Since(start)
		endSpan(err)
		mm.Observe(d, err)
		pluginName, skill, recorded := reachedBy(method, res, err)
		if err != nil && !recorded {
			h.failures.Add(failure(ctx, method, err))
		}
		if h.cfg.Log.Access {
			h.logAccess(ctx, method, pluginName, skill, d, err)
		}
		return res, err
	}
}

// reacher is a method result that names the skill it ran (the results of
// skill/execute and of agent/call a plugin answered).
type reacher interface {
	Reached() (plugin, skill string)
}

// reachedBy is the plugin and skill a call's outcome names (a blocking A2A
// send's task names its skill), and whether a failure was a skill's (the
// registry's observer recorded it).
func reachedBy(method string, res any, err error) (pluginName, skill string, failed bool) {
	if err != nil {
		return plugin.Reached(err)
	}
	if r, ok := res.(reacher); ok {
		pluginName, skill = r.Reached()
	} else {
		pluginName, skill = a2a.Reached(method, res)
	}
	return pluginName, skill, false
}

// rejected hears of requests refused before a method ran (malformed,
// oversized, unknown method, bad envelope): counted by reason, recorded in
// the ring and logged like a call. The method, from the client, is clipped.
func (h *Root) rejected(ctx context.Context, method string, err error) {
	h.metrics.Rejected(err)
	method = clipMethod(method)
	h.failures.Add(failure(ctx, method, err))
	if h.cfg.Log.Access {
		// no call began: the line names the transport's request id
		ctx = auth.Invoke(ctx, auth.Invocation{RequestID: jsonrpc.TransportFrom(ctx).RequestID, Method: method})
		h.logAccess(ctx, method, "", "", 0, err)
	}
}

// clipMethod keeps a client's method name short in logs and the ring.
func clipMethod(m string) string {
	if len(m) > 64 {
		return strings.ToValidUTF8(m[:64], "") + "…"
	}
	return m
}

// serverSide are the kinds an operator should look at: the host or a
// plugin failed, not the client's request.
var serverSide = map[fault.Kind]bool{fault.Internal: true, fault.SkillFailed: true, fault.Timeout: true, fault.ResourceExhausted: true}

// logAccess writes the access line of one call: info, or warn when the
// host or a plugin failed it.
func (h *Root) logAccess(ctx context.Context, method, pluginName, skill string, d time.Duration, err error) {
	level, status, code, reason := slog.LevelInfo, "ok", 0, ""
	if err != nil {
		fe := fault.From(err)
		status, code, reason = "error", fe.Kind.Code(), fe.WireReason()
		if serverSide[fe.Kind] {
			level = slog.LevelWarn
		}
	}
	if !h.log.Enabled(ctx, level) {
		return
	}
	inv := auth.InvocationFrom(ctx)
	h.log.LogAttrs(ctx, level, "access",
		slog.String("transport", jsonrpc.TransportFrom(ctx).Name),
		slog.String("method", method),
		slog.String("plugin", pluginName),
		slog.String("skill", skill),
		slog.String("session_id", inv.SessionID),
		slog.String("request_id", inv.RequestID),
		slog.String("key_id", inv.Principal.KeyID()),
		slog.String("status", status),
		slog.Int("code", code),
		slog.String("reason", reason),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
	)
}

// httpAccessLog counts every HTTP request by route and status and, with
// log.access, writes an access line for those the JSON-RPC engine did not
// handle (its calls have lines of their own): the other routes, and
// requests refused before a method ran (credentials, Host, Origin, media
// type, body size). Info; debug for a successful /health (probes); warn
// for a 5xx.
type httpAccessLog struct {
	metrics *metrics.Metrics
	log     *slog.Logger
	on      bool // log.access
}

// Answered implements httpx.AccessSink.
func (l httpAccessLog) Answered(ctx context.Context, a httpx.Access) {
	l.metrics.HTTPRequest(a.Route, a.Status)
	if !l.on || a.RPC {
		return
	}
	level := slog.LevelInfo
	switch {
	case a.Status >= 500:
		level = slog.LevelWarn
	case a.Route == "/health" && a.Status < 400:
		level = slog.LevelDebug
	}
	if !l.log.Enabled(ctx, level) {
		return
	}
	status, code, reason := "ok", 0, ""
	if a.Status >= 400 {
		status = "error"
	}
	if a.Err != nil {
		status, code, reason = "error", a.Err.Kind.Code(), a.Err.WireReason()
	}
	l.log.LogAttrs(ctx, level, "access",
		slog.String("transport", "http"),
		slog.String("http_method", a.HTTPMethod),
		slog.String("path", a.Path),
		slog.String("route", a.Route),
		slog.String("session_id", a.SessionID),
		slog.String("request_id", a.RequestID),
		slog.String("key_id", a.KeyID),
		slog.String("remote", a.Remote),
		slog.String("status", status),
		slog.Int("http_status", a.Status),
		slog.Int("code", code),
		slog.String("reason", reason),
		slog.Float64("duration_ms", float64(a.Duration.Microseconds())/1000),
	)
}
