package jsonrpc

import (
	"context"
	"encoding/json"
	"unsafe"

	"github.com/skillhost/skillhost/host/fault"
)

// Request is one decoded JSON-RPC 2.0 request object.
type Request struct {
	// ID holds the exact bytes of the request's id as received (a string,
	// number or null literal); nil means the request is a notification.
	ID json.RawMessage
	// Method is the non-empty method name.
	Method string
	// Params is the raw params value: an object, an array, or nil when absent.
	Params json.RawMessage
	// Meta holds the spec-001 envelope fields read from a params object.
	Meta Envelope

	// members are the params object's members as the engine's read of the
	// body found them (slices of it), valid while Params is the object they
	// were read from (see params).
	members []member
	parsed  json.RawMessage
	inline  [4]member // members' first backing: most params have a few
}

// params calls f for each member of the params object, in order, until f
// fails: from what the engine's read of the body kept, else (Params set or
// replaced by other code) from a scan of Params.
func (r *Request) params(f func(name []byte, val json.RawMessage) error) error {
	if r.kept() {
		for _, m := range r.members {
			if err := f(m.name, m.value); err != nil {
				return err
			}
		}
		return nil
	}
	return objectMembers(r.Params, func(name string, val json.RawMessage) error { return f([]byte(name), val) })
}

// kept reports whether members are those of Params (the engine's read of
// the body kept them and Params was not replaced since).
func (r *Request) kept() bool {
	return len(r.parsed) > 0 && len(r.parsed) == len(r.Params) && unsafe.SliceData(r.parsed) == unsafe.SliceData(r.Params)
}

// IsNotification reports whether the request has no id member, so no
// response is sent for it.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Envelope holds the spec-001 envelope fields a client may put in a params
// object. Empty strings mean the field was absent.
type Envelope struct {
	RequestID string
	SessionID string
	Timestamp string
	Version   string
}

// Handler serves one method. A returned *fault.Error becomes the error
// response; any other error becomes -32603 "internal error" (the cause is
// logged, never sent). A result implementing Stream is streamed by the
// transport instead of being encoded.
type Handler func(ctx context.Context, req *Request) (any, error)

// Reply is the outcome of Engine.Handle: a Body to send, nothing (only
// notifications), or a stream (Streaming) the transport delivers with Pump.
type Reply struct {
	// Body is the encoded response (an object, or an array for a batch); nil
	// when there is nothing to send or the reply is a stream.
	Body []byte
	// Err is the error Body carries when the body was a single request (or
	// could not be decoded) and it failed; nil for results and batches.
	// Transports that express some errors as statuses read it (HTTP 401,
	// 403, 429).
	Err *fault.Error

	// ErrorEvent reports that Body is the error of a method whose errors
	// are sent as one stream event (ErrorsAsEvents): a transport that
	// streams with Server-Sent Events sends Body as one SSE event.
	ErrorEvent bool

	stream  *streamReply
	held    *held  // Body's bytes in the response budget (a single request's)
	release func() // gives a batch's bytes back to the response budget
}

// TransportInfo describes the transport a request came through. Transports
// attach it with WithTransport; handlers read it with TransportFrom.
type TransportInfo struct {
	Name       string              // "http", "stdio", …
	RequestID  string              // transport-level request id, used in error data when the envelope has none
	Header     func(string) string // request header lookup; nil when the transport has none
	RemoteAddr string              // peer address, "" when not applicable
	// Agent is the agent (plugin) the endpoint is restricted to, e.g.
	// "text" for POST /agents/text/rpc; "" for the whole host. A2A methods
	// route to that plugin's skills only.
	Agent string
	// Allow, when set, is the endpoint's method filter: a method it refuses
	// is answered -32601 as if it did not exist. Nil allows every method.
	Allow func(method string) bool
}

type transportKey struct{}

// WithTransport returns a copy of ctx carrying info.
func WithTransport(ctx context.Context, info TransportInfo) context.Context {
	return context.WithValue(ctx, transportKey{}, info)
}

// TransportFrom returns the TransportInfo attached to ctx, or the zero value.
// A nil Header is replaced by one that always returns "".
func TransportFrom(ctx context.Context) TransportInfo {
	info, _ := ctx.Value(transportKey{}).(TransportInfo)
	if info.Header == nil {
		info.Header = func(string) string { return "" }
	}
	return info
}
