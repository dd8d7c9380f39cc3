package fault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// The wire shapes of an error. Every place skillhost turns an error into
// bytes uses one of them, and each is encoded here only:
//
//	MarshalRPC     the JSON-RPC error member {code, message, data}, data being
//	               an object {reason, request_id, timestamp, session_id?,
//	               …e.Data} or [Info] (DataStyle)
//	Info           google.rpc.ErrorInfo {@type, reason: the kind's A2A reason,
//	               domain: a2a-protocol.org, metadata: {reason, request_id,
//	               timestamp, session_id?, …e.Data as strings}}
//	MarshalStatus  google.rpc.Status, the A2A HTTP+JSON binding's error body
//	               {"error": {code: HTTPStatus, status: GRPCStatus, message,
//	               details: [Info]}}
//	Summary        {code, reason, kind, message}: an error inside a result (a
//	               failed task's status message, an MCP tool error, a failed
//	               notification delivery, a plan step's events)
//
// The guest ABI's {code, message, data} is written by the host functions
// with the codes of guest.go. The reason on the wire is always WireReason:
// never empty.

// ErrorInfoType is the @type of a google.rpc.ErrorInfo.
const ErrorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// Domain is the domain of every ErrorInfo the host sends: the A2A
// protocol's, so A2A clients map its reason back to the protocol's errors;
// skillhost's own reason is in the metadata.
const Domain = "a2a-protocol.org"

// Meta is what an error answers: the request (and its session) and when.
type Meta struct {
	RequestID string    // "" is sent as ""; the transports always know one
	SessionID string    // "" = none; the error's data "session_id" wins
	Time      time.Time // zero = now
}

// Timestamp formats t the way every timestamp on the wire is written:
// ISO 8601 in UTC with milliseconds ("2024-04-19T10:30:00.000Z").
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func (m Meta) timestamp() string {
	if m.Time.IsZero() {
		return Timestamp(time.Now())
	}
	return Timestamp(m.Time)
}

func (m Meta) session(e *Error) string {
	if s, ok := e.Data["session_id"].(string); ok && s != "" {
		return s
	}
	return m.SessionID
}

// Safe classifies err for a client: a *Error in the chain is returned as
// is; context deadline and cancellation become Timeout and Canceled;
// anything else (nil too) becomes Internal with the message "internal
// error", so Go error text never reaches a client. hidden reports that last
// case: the caller logs err.
func Safe(err error) (e *Error, hidden bool) {
	if err == nil {
		return New(Internal, ReasonInternal, "internal error"), true
	}
	if errors.As(err, &e) {
		return e, false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return From(err), false
	}
	return Wrap(Internal, ReasonInternal, err, "internal error"), true
}

// HTTPStatus is the error's HTTP status, for transports that express
// errors as statuses: its reason's when reasonRules gives one (413, 415,
// 503), else its kind's.
func (e *Error) HTTPStatus() int {
	if r := reasonRules[e.WireReason()]; r.http != 0 {
		return r.http
	}
	return e.Kind.HTTPStatus()
}

// GRPCStatus is the google.rpc.Code name that goes with HTTPStatus.
func (e *Error) GRPCStatus() string {
	if r := reasonRules[e.WireReason()]; r.grpc != "" {
		return r.grpc
	}
	return e.Kind.GRPCStatus()
}

// Refusal reports whether the error refuses the caller rather than answers
// its call: its credentials (Unauthorized), its scopes (Forbidden), its
// rate (rate_limited) or its share of the host (key_quota). The JSON-RPC
// binding answers an error with HTTP 200 unless it is a refusal.
func (e *Error) Refusal() bool {
	return e.Kind == Unauthorized || e.Kind == Forbidden || reasonRules[e.WireReason()].refusal
}

// RPCStatus is the HTTP status of a JSON-RPC response carrying the error as
// its one response: HTTPStatus for a refusal, else 200 (the error is the
// response).
func (e *Error) RPCStatus() int {
	if e.Refusal() {
		return e.HTTPStatus()
	}
	return http.StatusOK
}

// DataStyle is the form of a JSON-RPC error's data.
type DataStyle uint8

// The data styles.
const (
	DataAuto   DataStyle = iota // the Data object; [Info] for the A2A kinds (-32001…-32009)
	DataInfo                    // always [Info] (A2A v1.0 methods)
	DataObject                  // always the Data object (A2A v0.3 methods)
)

// data is the error's JSON-RPC data object: its Data (when extras), then
// reason, request_id, timestamp and session_id (when known).
func (e *Error) data(m Meta, extras bool) map[string]any {
	d := make(map[string]any, len(e.Data)+4)
	if extras {
		for k, v := range e.Data {
			d[k] = v
		}
	}
	d["reason"], d["request_id"], d["timestamp"] = e.WireReason(), m.RequestID, m.timestamp()
	if sid := m.session(e); sid != "" {
		d["session_id"] = sid
	}
	return d
}

// Info is the error's google.rpc.ErrorInfo: the kind's A2A reason in the
// A2A domain, skillhost's reason, the request and the error's data (as
// strings) in the metadata.
func (e *Error) Info(m Meta) map[string]any {
	meta := make(map[string]string, len(e.Data)+4)
	for k, v := range e.Data {
		meta[k] = stringify(v)
	}
	meta["reason"], meta["request_id"], meta["timestamp"] = e.WireReason(), m.RequestID, m.timestamp()
	if sid := m.session(e); sid != "" {
		meta["session_id"] = sid
	}
	return map[string]any{"@type": ErrorInfoType, "reason": e.Kind.A2AReason(), "domain": Domain, "metadata": meta}
}

func stringify(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// rpcError is the JSON-RPC error member.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// MarshalRPC encodes the error as a JSON-RPC error member, {"code",
// "message", "data"}, with data in style. Data values that cannot be
// encoded are dropped (the reason and the request stay).
func (e *Error) MarshalRPC(m Meta, style DataStyle) []byte {
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	out := rpcError{Code: e.Kind.Code(), Message: e.Message()}
	if style == DataInfo || (style == DataAuto && e.Kind.IsA2A()) {
		out.Data = []any{e.Info(m)} // strings only: always encodes
		b, _ := json.Marshal(out)
		return b
	}
	out.Data = e.data(m, true)
	b, err := json.Marshal(out)
	if err != nil {
		out.Data = e.data(m, false) // strings only
		b, _ = json.Marshal(out)
	}
	return b
}

// MarshalStatus encodes the error as the A2A HTTP+JSON binding's error
// body, a google.rpc.Status: {"error": {"code": HTTPStatus, "status":
// GRPCStatus, "message", "details": [Info]}}. It is sent with HTTPStatus.
func (e *Error) MarshalStatus(m Meta) []byte {
	b, err := json.Marshal(map[string]any{"error": map[string]any{
		"code": e.HTTPStatus(), "status": e.GRPCStatus(), "message": e.Message(), "details": []any{e.Info(m)},
	}})
	if err != nil { // cannot happen: Info holds strings only
		return []byte(`{"error":{"code":500,"status":"INTERNAL","message":"internal error"}}`)
	}
	return b
}

// Summary is an error inside a result rather than as the response: a
// failed task's status message metadata, an MCP tool error's structured
// content, a notification's delivery error, a plan step's events.
type Summary struct {
	Code    int    `json:"code"`    // the JSON-RPC code
	Reason  string `json:"reason"`  // WireReason: never ""
	Kind    string `json:"kind"`    // the kind's name, e.g. "SkillFailed"
	Message string `json:"message"` // Message
}

// Summary is the error's Summary.
func (e *Error) Summary() Summary {
	return Summary{Code: e.Kind.Code(), Reason: e.WireReason(), Kind: e.Kind.String(), Message: e.Message()}
}

// Map is s as a JSON object (for metadata and structured content).
func (s Summary) Map() map[string]any {
	return map[string]any{"code": s.Code, "reason": s.Reason, "kind": s.Kind, "message": s.Message}
}
