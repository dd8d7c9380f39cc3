// Package rest is the A2A v1.0 HTTP+JSON binding: a thin switch from each
// route to the v1.0 JSON-RPC method it stands for, run through the engine.
package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// The A2A v1.0 HTTP+JSON binding. Every route is translated to the v1.0
// JSON-RPC method it stands for and run through the same engine (so the
// same handlers, authorization, limits and metrics apply); results are the
// JSON-RPC results, errors are google.rpc.Status bodies encoded by host/fault
// (Error.MarshalStatus: HTTP status, "status" and ErrorInfo from its table):
//
//	POST   /message:send                              SendMessage
//	POST   /message:stream                            SendStreamingMessage (SSE)
//	GET    /tasks/{id}?historyLength=                  GetTask
//	GET    /tasks?contextId=&status=&pageSize=&…       ListTasks
//	POST   /tasks/{id}:cancel                          CancelTask
//	POST   /tasks/{id}:subscribe                       SubscribeToTask (SSE)
//	POST   /tasks/{id}/pushNotificationConfigs         CreateTaskPushNotificationConfig
//	GET    /tasks/{id}/pushNotificationConfigs         ListTaskPushNotificationConfigs
//	GET    /tasks/{id}/pushNotificationConfigs/{cid}   GetTaskPushNotificationConfig
//	DELETE /tasks/{id}/pushNotificationConfigs/{cid}   DeleteTaskPushNotificationConfig
//	GET    /extendedAgentCard                          GetExtendedAgentCard
//
// under agentcard.RESTPath, each also under /{tenant} (one plugin's skills).

// Invoker runs a JSON-RPC method and returns its undecoded result;
// *jsonrpc.Engine implements it.
type Invoker interface {
	Invoke(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// Request is one request of the HTTP+JSON binding.
type Request struct {
	Method string     // HTTP method
	Path   string     // below agentcard.RESTPath, e.g. "/tasks/abc:cancel"
	Query  url.Values // query parameters
	Body   []byte     // request body (may be empty)
}

// Reply is what to answer: Body with Status, or Stream as Server-Sent
// Events (each event is one encoded JSON object).
type Reply struct {
	Status int
	Body   []byte
	Stream jsonrpc.Stream // events are json.RawMessage; nil unless streaming
	Err    *fault.Error   // the error Body carries, if any
}

// Binding serves the HTTP+JSON binding over an Invoker. It is safe for
// concurrent use.
type Binding struct {
	inv Invoker
	log *slog.Logger
}

// New returns the binding over inv (the engine the A2A methods are
// registered on).
func New(inv Invoker, log *slog.Logger) *Binding {
	if log == nil {
		log = slog.Default()
	}
	return &Binding{inv: inv, log: log}
}

// restCall is a route resolved to its JSON-RPC method.
type restCall struct {
	method string
	params any
	stream bool
}

// Serve answers one request.
func (b *Binding) Serve(ctx context.Context, req Request) Reply {
	call, err := resolve(req)
	if err != nil {
		return b.errorReply(ctx, err)
	}
	params, err := json.Marshal(call.params)
	if err != nil {
		return b.errorReply(ctx, fault.Wrap(fault.InvalidRequest, fault.ReasonInvalidRequest, err, "request body"))
	}
	res, err := b.inv.Invoke(ctx, call.method, params)
	if err != nil && call.method == "SubscribeToTask" && !fault.From(err).Refusal() {
		// As a2a-go's server does: a subscription's error (an unknown
		// task, a terminal one) is the stream's one event. A refusal
		// (credentials, scope, a quota or rate) keeps its HTTP status, as
		// on the JSON-RPC binding (httpx sends an error event only for a
		// 200 reply).
		return Reply{Status: http.StatusOK, Stream: &restStream{b: b, src: failedStream{err}}}
	}
	if err != nil {
		return b.errorReply(ctx, err)
	}
	if st, ok := res.(jsonrpc.Stream); ok {
		return Reply{Status: http.StatusOK, Stream: &restStream{b: b, src: st}}
	}
	if call.method == "DeleteTaskPushNotificationConfig" {
		res = struct{}{}
	}
	body, err := json.Marshal(res)
	if err != nil {
		return b.errorReply(ctx, err)
	}
	return Reply{Status: http.StatusOK, Body: body}
}

// ErrorBody encodes err as the binding's error body, a google.rpc.Status
// (fault's Error.MarshalStatus: {"error": {code, status, message, details:
// [ErrorInfo]}}, the same ErrorInfo as the JSON-RPC binding's), and returns
// its HTTP status.
func (b *Binding) ErrorBody(ctx context.Context, err error) ([]byte, int, *fault.Error) {
	fe, hidden := fault.Safe(err)
	if hidden {
		b.log.ErrorContext(ctx, "a2a rest: internal error", "err", err)
	}
	return fe.MarshalStatus(jsonrpc.ErrorMeta(ctx)), fe.HTTPStatus(), fe
}

func (b *Binding) errorReply(ctx context.Context, err error) Reply {
	body, status, fe := b.ErrorBody(ctx, err)
	return Reply{Status: status, Body: body, Err: fe}
}

// restStream encodes a v1.0 event stream for the binding: each event is the
// StreamResponse JSON; an error becomes one {"error": …} event and ends it.
type restStream struct {
	b    *Binding
	src  jsonrpc.Stream
	done bool
}

func (s *restStream) Next(ctx context.Context) (any, error) {
	if s.done {
		return nil, io.EOF
	}
	v, err := s.src.Next(ctx)
	if errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	if err == nil {
		var b []byte
		if b, err = json.Marshal(v); err == nil {
			return json.RawMessage(b), nil
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.done = true
	body, _, _ := s.b.ErrorBody(ctx, err)
	return json.RawMessage(body), nil
}

// failedStream is a stream whose first event is its error.
type failedStream struct{ err error }

func (f failedStream) Next(context.Context) (any, error) { return nil, f.err }

// Close closes the underlying stream.
func (s *restStream) Close() error {
	if c, ok := s.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// resolve maps a request to its JSON-RPC call: the route without a tenant
// first, then with the first path segment as the tenant.
func resolve(req Request) (restCall, error) {
	segs := strings.Split(strings.Trim(req.Path, "/"), "/")
	call, ok, err := restRoute(req, segs, "")
	if !ok && err == nil && len(segs) > 1 {
		call, ok, err = restRoute(req, segs[1:], segs[0])
	}
	if err != nil {
		return restCall{}, err
	}
	if !ok {
		return restCall{}, fault.Newf(fault.MethodNotFound, fault.ReasonUnknownMethod, "no A2A HTTP+JSON route %s %s", req.Method, truncate(req.Path, 128))
	}
	return call, nil
}

// restRoute matches segs (the path below agentcard.RESTPath and the tenant) against the
// binding's routes.
func restRoute(req Request, segs []string, tenant string) (restCall, bool, error) {
	get, post := req.Method == http.MethodGet, req.Method == http.MethodPost
	switch {
	case len(segs) == 1 && post && (segs[0] == "message:send" || segs[0] == "message:stream"):
		body, err := bodyWith(req.Body, map[string]string{"tenant": tenant})
		return restCall{method: map[bool]string{true: "SendStreamingMessage", false: "SendMessage"}[segs[0] == "message:stream"],
			params: body, stream: segs[0] == "message:stream"}, true, err
	case len(segs) == 1 && get && segs[0] == "extendedAgentCard":
		return restCall{method: "GetExtendedAgentCard", params: a2av1.GetExtendedAgentCardRequest{Tenant: tenant}}, true, nil
	case len(segs) == 1 && get && segs[0] == "tasks":
		q, err := listQuery(req.Query, tenant)
		return restCall{method: "ListTasks", params: q}, true, err
	case len(segs) < 2 || segs[0] != "tasks" || segs[1] == "":
		return restCall{}, false, nil
	}
	id := segs[1]
	switch {
	case len(segs) == 2 && get:
		hl, err := intParam(req.Query, "historyLength")
		return restCall{method: "GetTask", params: a2av1.GetTaskRequest{ID: a2av1.TaskID(id), HistoryLength: hl, Tenant: tenant}}, true, err
	case len(segs) == 2 && post && strings.HasSuffix(id, ":cancel"):
		return restCall{method: "CancelTask", params: a2av1.CancelTaskRequest{ID: a2av1.TaskID(strings.TrimSuffix(id, ":cancel")), Tenant: tenant}}, true, nil
	case len(segs) == 2 && post && strings.HasSuffix(id, ":subscribe"):
		return restCall{method: "SubscribeToTask", stream: true,
			params: a2av1.SubscribeToTaskRequest{ID: a2av1.TaskID(strings.TrimSuffix(id, ":subscribe")), Tenant: tenant}}, true, nil
	case len(segs) < 3 || segs[2] != "pushNotificationConfigs":
		return restCall{}, false, nil
	case len(segs) == 3 && post:
		body, err := bodyWith(req.Body, map[string]string{"tenant": tenant, "taskId": id})
		return restCall{method: "CreateTaskPushNotificationConfig", params: body}, true, err
	case len(segs) == 3 && get:
		size, err := intParam(req.Query, "pageSize")
		p := a2av1.ListTaskPushConfigRequest{TaskID: a2av1.TaskID(id), Tenant: tenant, PageToken: req.Query.Get("pageToken")}
		if size != nil {
			p.PageSize = *size
		}
		return restCall{method: "ListTaskPushNotificationConfigs", params: p}, true, err
	case len(segs) == 4 && get:
		return restCall{method: "GetTaskPushNotificationConfig", params: a2av1.GetTaskPushConfigRequest{TaskID: a2av1.TaskID(id), ID: segs[3], Tenant: tenant}}, true, nil
	case len(segs) == 4 && req.Method == http.MethodDelete:
		return restCall{method: "DeleteTaskPushNotificationConfig", params: a2av1.DeleteTaskPushConfigRequest{TaskID: a2av1.TaskID(id), ID: segs[3], Tenant: tenant}}, true, nil
	}
	return restCall{}, false, nil
}

// bodyWith is the JSON object body with the non-empty members of set
// added (the path's tenant and task id win over the body's).
func bodyWith(body []byte, set map[string]string) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "the request body must be a JSON object")
	}
	for k, v := range set {
		if v != "" {
			b, _ := json.Marshal(v)
			m[k] = b
		}
	}
	return m, nil
}

func intParam(q url.Values, name string) (*int, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "query parameter %s is not an integer", name)
	}
	return &n, nil
}

// listQuery reads ListTasks' query parameters (statusTimestampAfter, or
// lastUpdatedAfter as a2a-go's client names it).
func listQuery(q url.Values, tenant string) (map[string]any, error) {
	out := map[string]any{}
	if tenant != "" {
		out["tenant"] = tenant
	}
	for _, k := range []string{"contextId", "status", "pageToken"} {
		if v := q.Get(k); v != "" {
			out[k] = v
		}
	}
	for _, k := range []string{"pageSize", "historyLength"} {
		n, err := intParam(q, k)
		if err != nil {
			return nil, err
		}
		if n != nil {
			out[k] = *n
		}
	}
	if v := q.Get("includeArtifacts"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "query parameter includeArtifacts is not a boolean")
		}
		out["includeArtifacts"] = b
	}
	after := q.Get("statusTimestampAfter")
	if after == "" {
		after = q.Get("lastUpdatedAfter")
	}
	if after != "" {
		out["statusTimestampAfter"] = after
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
