package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/skillhost/skillhost/host/fault"
)

// Run runs call in the place of method's registered handler: through the
// engine's middleware (scopes, rate and running-call limits, metrics,
// access lines), the endpoint's method filter and panic recovery, exactly
// as a request for method would run. It is for a binding that decodes and
// encodes typed values itself (the A2A gRPC binding calls a2a's typed
// methods), so it gets the same checks as Invoke without a detour through
// JSON. method must be registered (an unknown one, or one the endpoint
// filters out, is MethodNotFound): Run cannot invent a method the
// middleware has never seen. call's result is returned undecoded.
func (e *Engine) Run(ctx context.Context, method string, call func(ctx context.Context) (any, error)) (res any, err error) {
	e.mu.RLock()
	_, ok := e.methods[method]
	e.mu.RUnlock()
	if allow := TransportFrom(ctx).Allow; ok && allow != nil && !allow(method) {
		ok = false
	}
	if !ok {
		return nil, e.reject(ctx, method, fault.Newf(fault.MethodNotFound, fault.ReasonUnknownMethod, "method %q not found", method))
	}
	h := Handler(func(ctx context.Context, _ *Request) (any, error) { return call(ctx) })
	if e.mw != nil {
		h = e.mw(method, h)
	}
	defer func() {
		if p := recover(); p != nil {
			e.log.ErrorContext(ctx, "jsonrpc: handler panicked", "method", method,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res, err = nil, fault.New(fault.Internal, fault.ReasonInternal, "internal error")
		}
	}()
	return h(ctx, &Request{ID: json.RawMessage(`0`), Method: method})
}
