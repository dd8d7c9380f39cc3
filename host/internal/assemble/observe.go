package assemble

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/admin"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// callRecord is attached to each JSON-RPC call's context by the access
// middleware; the registry's observer notes the skill the call reached.
// A2A tasks may run the skill after the handler returned, hence atomics.
type callRecord struct {
	method   string
	plugin   atomic.Pointer[plugin.Plugin]
	skill    atomic.Pointer[plugin.Skill]
	recorded atomic.Bool // a skill failure of this call is in the ring
}

type callRecordKey struct{}

func recordFrom(ctx context.Context) *callRecord {
	r, _ := ctx.Value(callRecordKey{}).(*callRecord)
	return r
}

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
	rec := recordFrom(ctx)
	if rec != nil {
		rec.plugin.Store(r.Plugin)
		rec.skill.Store(r.Skill)
	}
	if r.Err == nil {
		return
	}
	f := failure(ctx, "", r.Err)
	f.Plugin, f.Skill = r.Plugin.Manifest.Name, r.Skill.ID
	if rec != nil {
		f.Method = rec.method
		rec.recorded.Store(true)
	}
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
	call := hostfn.CallFrom(ctx)
	tr := jsonrpc.TransportFrom(ctx)
	return admin.Failure{Time: time.Now().UTC(), Method: method, Code: fe.Kind.Code(), Reason: fe.WireReason(),
		Message: fe.Message(), SessionID: call.SessionID, RequestID: call.RequestID,
		KeyID: auth.From(ctx).KeyID(), Transport: tr.Name}
}

// access is the outermost engine middleware: one access line per call
// (log.access), the method's metrics, and failures that reached no skill
// into the ring (a skill's own failures are recorded by the observer).
func (h *Root) access(method string, next jsonrpc.Handler) jsonrpc.Handler {
	mm := h.metrics.Method(method)
	return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		start := time.Now()
		rec := &callRecord{method: method}
		sctx, endSpan := h.startSpan(ctx, method)
		res, err := next(context.WithValue(sctx, callRecordKey{}, rec), req)
		d := time.Since(start)
		endSpan(err)
		mm.Observe(d, err)
		if err != nil && !rec.recorded.Load() {
			f := failure(ctx, method, err)
			f.SessionID, f.RequestID = req.Meta.SessionID, requestID(ctx, req)
			if p, sk := rec.plugin.Load(), rec.skill.Load(); p != nil && sk != nil {
				f.Plugin, f.Skill = p.Manifest.Name, sk.ID
			}
			h.failures.Add(f)
		}
		if h.cfg.Log.Access {
			h.logAccess(ctx, method, req, rec, d, err)
		}
		return res, err
	}
}

// rejected hears of requests refused before a method ran (malformed,
// oversized, unknown method, bad envelope): counted by reason, recorded in
// the ring and logged like a call. The method, from the client, is clipped.
func (h *Root) rejected(ctx context.Context, method string, err error) {
	h.metrics.Rejected(err)
	method = clipMethod(method)
	h.failures.Add(failure(ctx, method, err))
	if h.cfg.Log.Access {
		h.logAccess(ctx, method, &jsonrpc.Request{}, &callRecord{}, 0, err)
	}
}

// clipMethod keeps a client's method name short in logs and the ring.
func clipMethod(m string) string {
	if len(m) > 64 {
		return strings.ToValidUTF8(m[:64], "") + "…"
	}
	return m
}

// requestID is the call's request id as error data report it: the
// envelope's, else the transport's.
func requestID(ctx context.Context, req *jsonrpc.Request) string {
	if req.Meta.RequestID != "" {
		return req.Meta.RequestID
	}
	return jsonrpc.TransportFrom(ctx).RequestID
}

// serverSide are the kinds an operator should look at: the host or a
// plugin failed, not the client's request.
var serverSide = map[fault.Kind]bool{fault.Internal: true, fault.SkillFailed: true, fault.Timeout: true, fault.ResourceExhausted: true}

// logAccess writes the access line of one call: info, or warn when the
// host or a plugin failed it.
func (h *Root) logAccess(ctx context.Context, method string, req *jsonrpc.Request, rec *callRecord, d time.Duration, err error) {
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
	pluginName, skill := "", ""
	if p, sk := rec.plugin.Load(), rec.skill.Load(); p != nil && sk != nil {
		pluginName, skill = p.Manifest.Name, sk.ID
	}
	h.log.LogAttrs(ctx, level, "access",
		slog.String("transport", jsonrpc.TransportFrom(ctx).Name),
		slog.String("method", method),
		slog.String("plugin", pluginName),
		slog.String("skill", skill),
		slog.String("session_id", req.Meta.SessionID),
		slog.String("request_id", requestID(ctx, req)),
		slog.String("key_id", auth.From(ctx).KeyID()),
		slog.String("status", status),
		slog.Int("code", code),
		slog.String("reason", reason),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
	)
}

// httpAccess counts every HTTP request by route and status and, with
// log.access, writes an access line for those the JSON-RPC engine did not
// handle (its calls have lines of their own): the other routes, and
// requests refused before a method ran (credentials, Host, Origin, media
// type, body size). Info; debug for a successful /health (probes); warn
// for a 5xx.
func (h *Root) httpAccess(ctx context.Context, a httpx.Access) {
	h.metrics.HTTPRequest(a.Route, a.Status)
	if !h.cfg.Log.Access || a.RPC {
		return
	}
	level := slog.LevelInfo
	switch {
	case a.Status >= 500:
		level = slog.LevelWarn
	case a.Route == "/health" && a.Status < 400:
		level = slog.LevelDebug
	}
	if !h.log.Enabled(ctx, level) {
		return
	}
	status, code, reason := "ok", 0, ""
	if a.Status >= 400 {
		status = "error"
	}
	if a.Err != nil {
		status, code, reason = "error", a.Err.Kind.Code(), a.Err.WireReason()
	}
	h.log.LogAttrs(ctx, level, "access",
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
