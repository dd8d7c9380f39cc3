package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/skillhost/skillhost/host/fault"
)

// Limits are an engine's caps; the host passes the rpc.* keys (this
// package imports only host/fault, so it cannot read the configuration).
// Every field is required but ResponseBudget.
type Limits struct {
	// MaxBodyBytes caps the size of a request body; larger bodies get a
	// -32600 error with reason body_too_large (rpc.max_body).
	MaxBodyBytes int
	// MaxBatch caps the number of requests in a batch; longer batches get
	// a single -32600 error with reason batch_too_large (rpc.max_batch).
	MaxBatch int
	// BatchConcurrency bounds how many requests of one batch run at once
	// (rpc.batch_concurrency).
	BatchConcurrency int
	// MaxBatchResponseBytes caps the total size of one batch's responses:
	// once they reach it, the element that does not fit and every later
	// one get -32106 output_limit (elements not started yet are not run),
	// so a small batch cannot make the host build a huge response
	// (rpc.max_batch_response).
	MaxBatchResponseBytes int
	// ResponseBudget caps the response bytes the engine holds for every
	// client together: from encoding until the transport calls Reply.Done.
	// A response that does not fit is replaced by -32106 response_budget
	// (the client may retry). Streamed events are not counted
	// (rpc.response_budget). 0: no cap.
	ResponseBudget int64
}

// Engine decodes JSON-RPC 2.0 bodies, dispatches them to registered handlers
// and encodes the responses. It knows nothing about transports. An Engine is
// safe for concurrent use; Register may be called at any time.
type Engine struct {
	maxBody   int
	maxBatch  int
	batchConc int
	// maxBatchResponse caps the response bytes of one batch.
	maxBatchResponse int
	// budget caps the response bytes held host-wide; nil: no cap.
	budget *responseBudget
	log    *slog.Logger
	accept func(string) bool

	mw       func(method string, h Handler) Handler
	rejected func(ctx context.Context, method string, err error)

	mu        sync.RWMutex
	methods   map[string]Handler
	names     map[string]string // the methods' names, by name (methodName)
	errorInfo map[string]bool   // methods whose errors always carry ErrorInfo data
	streams   map[string]bool   // methods whose result is a Stream
	events    map[string]bool   // methods whose errors are sent as a stream event
	objects   map[string]bool   // methods whose errors always carry object data
}

// MethodOption marks a method at registration.
type MethodOption func(e *Engine, method string)

// Streaming marks a method whose result is a Stream. Such a method is
// refused (-32600 stream_not_batchable) inside a batch or as a notification
// before its handler runs, so it has no effect there.
func Streaming() MethodOption {
	return func(e *Engine, method string) { e.streams[method] = true }
}

// ErrorsAsEvents marks a streaming method whose errors (including those
// raised before its stream starts) are delivered as one stream event: A2A
// v0.3 clients of message/stream read only Server-Sent Events.
func ErrorsAsEvents() MethodOption {
	return func(e *Engine, method string) { e.events[method] = true }
}

// ObjectData makes every error of the method carry `data` as an object,
// A2A kinds included (what A2A v0.3 clients decode).
func ObjectData() MethodOption {
	return func(e *Engine, method string) { e.objects[method] = true }
}

// ErrorInfoData makes every error of the method carry `data` as an array of
// google.rpc.ErrorInfo (what A2A v1.0 clients decode).
func ErrorInfoData() MethodOption {
	return func(e *Engine, method string) { e.errorInfo[method] = true }
}

// WithMiddleware wraps every handler registered after it, e.g. to record
// metrics for every method whoever registers it. Optional. Default: none.
func WithMiddleware(mw func(method string, h Handler) Handler) Option {
	return func(e *Engine) { e.mw = mw }
}

// Option configures an Engine.
type Option func(*Engine)

// WithLogger sets the logger for handler panics and hidden internal errors.
// Optional. Default: a logger that discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(e *Engine) {
		if l != nil {
			e.log = l
		}
	}
}

// WithRejected sets f to be told of every request refused before a
// handler ran (the middleware sees only those that reach one): a body that
// is too large or not JSON, a malformed request or batch element, an
// unknown method, a bad envelope, a streaming method in a batch. method is
// the request's ("" when it has none); it comes from the client. Optional.
// Default: none.
func WithRejected(f func(ctx context.Context, method string, err error)) Option {
	return func(e *Engine) { e.rejected = f }
}

// WithVersionCheck sets the predicate applied to the envelope `version`
// member; a refused version gets -32602 with reason unsupported_version. nil
// accepts every version. Optional. Default: AcceptVersion1.
func WithVersionCheck(accept func(version string) bool) Option {
	return func(e *Engine) { e.accept = accept }
}

// NewEngine returns an Engine with no methods under lim. It panics on a
// limit that is not positive: that is a programming error.
func NewEngine(lim Limits, opts ...Option) *Engine {
	if lim.MaxBodyBytes < 1 || lim.MaxBatch < 1 || lim.BatchConcurrency < 1 || lim.MaxBatchResponseBytes < 1 || lim.ResponseBudget < 0 {
		panic(fmt.Sprintf("jsonrpc: NewEngine needs positive limits, got %+v", lim))
	}
	e := &Engine{
		maxBody:   lim.MaxBodyBytes,
		maxBatch:  lim.MaxBatch,
		batchConc: lim.BatchConcurrency,

		maxBatchResponse: lim.MaxBatchResponseBytes,
		log:              slog.New(slog.DiscardHandler),
		accept:           AcceptVersion1,
		methods:          map[string]Handler{},
		names:            map[string]string{},
		errorInfo:        map[string]bool{},
		streams:          map[string]bool{},
		events:           map[string]bool{},
		objects:          map[string]bool{},
	}
	if lim.ResponseBudget > 0 {
		e.budget = &responseBudget{max: lim.ResponseBudget}
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Register adds a method, wrapped by the engine's middleware if any. It
// panics on an empty name, a nil handler or a duplicate registration: those
// are programming errors.
func (e *Engine) Register(method string, h Handler, opts ...MethodOption) {
	if method == "" || h == nil {
		panic("jsonrpc: Register needs a method name and a handler")
	}
	if e.mw != nil {
		h = e.mw(method, h)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.methods[method]; dup {
		panic(fmt.Sprintf("jsonrpc: method %q registered twice", method))
	}
	e.methods[method] = h
	e.names[method] = method
	for _, o := range opts {
		o(e, method)
	}
}

// RegisterA2A is Register for an official A2A v1.0 method: every error it
// returns, whatever its kind, carries `data` as an array of
// google.rpc.ErrorInfo, which is what A2A v1.0 clients decode.
func (e *Engine) RegisterA2A(method string, h Handler, opts ...MethodOption) {
	e.Register(method, h, append(opts, ErrorInfoData())...)
}

// methodName is the registered method named name, if there is one: the
// decoder's Method then costs no string.
func (e *Engine) methodName(name []byte) (string, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	s, ok := e.names[string(name)]
	return s, ok
}

// Methods lists the registered method names, sorted.
func (e *Engine) Methods() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]string, 0, len(e.methods))
	for m := range e.methods {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Handle processes one body (a request object or a batch) and returns what
// to send back. It never panics and always returns valid JSON in Body unless
// there is nothing to send. Requests refer into body (ids, params) and may
// outlive the call (streams, tasks): the caller must not reuse body.
func (e *Engine) Handle(ctx context.Context, body []byte) Reply {
	if len(body) > e.maxBody {
		return e.errorReply(ctx, nil, Envelope{}, fault.Newf(fault.InvalidRequest, fault.ReasonBodyTooLarge,
			"request body is %d bytes; the limit is %d", len(body), e.maxBody))
	}
	// One strict read of the body (decodeRequest, splitBatch) checks its
	// syntax and member names and keeps what the call needs.
	if kindOf(body) == '[' {
		return e.handleBatch(ctx, body)
	}
	req, echo, ferr := decodeRequestIn(body, e.methodName)
	if ferr != nil {
		return e.errorReply(ctx, echo, Envelope{}, ferr)
	}
	res, err := e.call(ctx, req, true)
	if req.IsNotification() {
		e.refuseStream(ctx, req, res)
		return Reply{}
	}
	if err != nil {
		r := e.requestError(ctx, req, err)
		e.mu.RLock()
		r.ErrorEvent = e.events[req.Method]
		e.mu.RUnlock()
		return r
	}
	if s, ok := res.(Stream); ok {
		return Reply{stream: &streamReply{eng: e, req: req, src: s}}
	}
	body, h := e.hold(ctx, req, e.result(ctx, req, res))
	return Reply{Body: body, held: h}
}

// Invoke runs one method as a single request would (the middleware, the
// endpoint's method filter, panic recovery) and returns its result value,
// which may be a Stream, undecoded: other bindings of the same methods (the
// A2A HTTP+JSON routes) encode it themselves. params is the params object.
func (e *Engine) Invoke(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return e.call(ctx, &Request{ID: json.RawMessage(`0`), Method: method, Params: params}, true)
}

// refuseStream closes res if it is a Stream that cannot be delivered (in a
// batch or for a notification) and reports whether it was one.
func (e *Engine) refuseStream(ctx context.Context, req *Request, res any) bool {
	s, ok := res.(Stream)
	if !ok {
		return false
	}
	if c, ok := s.(io.Closer); ok {
		if err := c.Close(); err != nil {
			e.log.WarnContext(ctx, "jsonrpc: closing refused stream", "method", req.Method, "err", err)
		}
	}
	return true
}

func (e *Engine) result(ctx context.Context, req *Request, res any) []byte {
	b, err := encodeResult(req.ID, res)
	if err != nil {
		return e.requestError(ctx, req, err).Body
	}
	return b
}

// call looks the method up, reads the envelope and runs the handler,
// recovering a panic as an internal error.
func (e *Engine) call(ctx context.Context, req *Request, single bool) (res any, err error) {
	e.mu.RLock()
	h, ok := e.methods[req.Method]
	streams := e.streams[req.Method]
	e.mu.RUnlock()
	if ok && streams && (!single || req.IsNotification()) {
		return nil, e.reject(ctx, req.Method, fault.Newf(fault.InvalidRequest, fault.ReasonStreamBatch,
			"method %q streams its result; call it alone with an id, not in a batch or as a notification", req.Method))
	}
	env, envErr := readEnvelope(req, e.accept)
	req.Meta = env
	if allow := TransportFrom(ctx).Allow; ok && allow != nil && !allow(req.Method) {
		ok = false
	}
	if !ok {
		return nil, e.reject(ctx, req.Method, fault.Newf(fault.MethodNotFound, fault.ReasonUnknownMethod, "method %q not found", req.Method))
	}
	if envErr != nil {
		return nil, e.reject(ctx, req.Method, envErr)
	}
	defer func() {
		if p := recover(); p != nil {
			e.log.ErrorContext(ctx, "jsonrpc: handler panicked", "method", req.Method,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res, err = nil, fault.New(fault.Internal, fault.ReasonInternal, "internal error")
		}
	}()
	return h(ctx, req)
}

func (e *Engine) errorReply(ctx context.Context, id json.RawMessage, env Envelope, err error) Reply {
	return e.encodeError(ctx, id, env, e.reject(ctx, "", err), fault.DataAuto)
}

// reject tells WithRejected's function of a request refused before its
// handler, and returns err.
func (e *Engine) reject(ctx context.Context, method string, err error) error {
	if e.rejected != nil {
		e.rejected(ctx, method, err)
	}
	return err
}

// requestError answers a decoded request with err, in the error-data style
// of its method (see RegisterA2A).
func (e *Engine) requestError(ctx context.Context, req *Request, err error) Reply {
	style := fault.DataAuto
	e.mu.RLock()
	switch {
	case e.errorInfo[req.Method]:
		style = fault.DataInfo
	case e.objects[req.Method]:
		style = fault.DataObject
	}
	e.mu.RUnlock()
	return e.encodeError(ctx, req.ID, req.Meta, err, style)
}

func (e *Engine) encodeError(ctx context.Context, id json.RawMessage, env Envelope, err error, style fault.DataStyle) Reply {
	fe, hidden := fault.Safe(err)
	if hidden {
		e.log.ErrorContext(ctx, "jsonrpc: internal error", "err", err)
	}
	return Reply{Body: encodeFault(id, env, TransportFrom(ctx).RequestID, fe, style), Err: fe}
}
