package jsonrpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

// ErrorInfoType is the @type of the google.rpc.ErrorInfo objects carried as
// error data by A2A kinds.
const ErrorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// ErrorDomain is the ErrorInfo domain of errors raised by this host.
const ErrorDomain = "skillhost"

var nullID = json.RawMessage("null")

// EncodeResult encodes a success response for id (nil encodes as null). If v
// cannot be encoded as JSON the response is a -32603 error instead.
func EncodeResult(id json.RawMessage, v any) []byte {
	b, err := encodeResult(id, v)
	if err != nil {
		return encodeFault(id, Envelope{}, "", fault.Wrap(fault.Internal, fault.ReasonInternal, err, "internal error"), styleDefault)
	}
	return b
}

func encodeResult(id json.RawMessage, v any) ([]byte, error) {
	res, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(res) + len(id) + 40)
	buf.WriteString(`{"jsonrpc":"2.0","result":`)
	buf.Write(res)
	buf.WriteString(`,"id":`)
	buf.Write(idOrNull(id))
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// EncodeError encodes an error response for id (nil encodes as null). err is
// classified by safeFault; env and the ctx's TransportInfo supply the
// request_id and session_id of the error data.
func EncodeError(ctx context.Context, id json.RawMessage, env Envelope, err error) []byte {
	fe, _ := safeFault(err)
	return encodeFault(id, env, TransportFrom(ctx).RequestID, fe, styleDefault)
}

// safeFault classifies err for the wire: a *fault.Error in the chain is
// returned as is; context deadline and cancellation become Timeout and
// Canceled; anything else becomes Internal with the message "internal error"
// so Go error text never reaches a client. hidden reports that last case (the
// caller should log err).
func safeFault(err error) (fe *fault.Error, hidden bool) {
	if err == nil {
		return fault.New(fault.Internal, fault.ReasonInternal, "internal error"), true
	}
	if errors.As(err, &fe) {
		return fe, false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fault.From(err), false
	}
	return fault.Wrap(fault.Internal, fault.ReasonInternal, err, "internal error"), true
}

type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// dataStyle is the form of an error's `data`.
type dataStyle uint8

const (
	styleDefault dataStyle = iota // an object; an ErrorInfo array for A2A kinds
	styleInfo                     // always an ErrorInfo array (A2A v1.0 methods)
	styleObject                   // always an object (A2A v0.3 methods)
)

// encodeFault encodes an error response with `data` in style.
func encodeFault(id json.RawMessage, env Envelope, transportRID string, fe *fault.Error, style dataStyle) []byte {
	e := wireError{Code: fe.Kind.Code(), Message: fe.Message()}
	info := style == styleInfo || (style == styleDefault && fe.Kind.IsA2A())
	e.Data = errorData(env, transportRID, fe, true, info)
	body, err := json.Marshal(e)
	if err != nil { // a Data value that cannot be encoded: drop the extras
		e.Data = errorData(env, transportRID, fe, false, info)
		body, _ = json.Marshal(e)
	}
	var buf bytes.Buffer
	buf.Grow(len(body) + len(id) + 40)
	buf.WriteString(`{"jsonrpc":"2.0","error":`)
	buf.Write(body)
	buf.WriteString(`,"id":`)
	buf.Write(idOrNull(id))
	buf.WriteByte('}')
	return buf.Bytes()
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nullID
	}
	return id
}

// errorData builds the `data` member: an object for JSON-RPC and
// skillhost kinds, a one-element array of google.rpc.ErrorInfo for A2A kinds.
func errorData(env Envelope, transportRID string, fe *fault.Error, extras, info bool) any {
	rid := env.RequestID
	if rid == "" {
		rid = transportRID
	}
	if rid == "" {
		rid = NewRequestID()
	}
	sid := env.SessionID
	if s, ok := fe.Data["session_id"].(string); ok && s != "" {
		sid = s
	}
	reason := fe.WireReason()
	ts := Timestamp(time.Now())

	if info {
		meta := map[string]string{}
		if extras {
			for k, v := range fe.Data {
				meta[k] = stringify(v)
			}
		}
		meta["request_id"], meta["timestamp"] = rid, ts
		if sid != "" {
			meta["session_id"] = sid
		}
		return []any{map[string]any{
			"@type":    ErrorInfoType,
			"reason":   upperSnake(reason),
			"domain":   ErrorDomain,
			"metadata": meta,
		}}
	}
	data := map[string]any{}
	if extras {
		for k, v := range fe.Data {
			data[k] = v
		}
	}
	data["request_id"], data["timestamp"], data["reason"] = rid, ts, reason
	if sid != "" {
		data["session_id"] = sid
	}
	return data
}

// ErrorInfo classifies err for the wire (safeFault: hidden reports an
// error whose text is not sent, which the caller should log) and returns the
// google.rpc.ErrorInfo object an A2A v1.0 JSON-RPC error carries for it
// (domain ErrorDomain, metadata with request_id, timestamp, session_id and
// the error's data), for the protocol's other bindings.
func ErrorInfo(ctx context.Context, err error) (fe *fault.Error, info map[string]any, hidden bool) {
	fe, hidden = safeFault(err)
	data := errorData(Envelope{}, TransportFrom(ctx).RequestID, fe, true, true).([]any)
	if _, jerr := json.Marshal(data); jerr != nil {
		data = errorData(Envelope{}, TransportFrom(ctx).RequestID, fe, false, true).([]any)
	}
	return fe, data[0].(map[string]any), hidden
}

// upperSnake turns a reason into ErrorInfo's UPPER_SNAKE_CASE.
func upperSnake(reason string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - ('a' - 'A')
		case (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'):
			return r
		}
		return '_'
	}, reason)
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

// NewRequestID returns a fresh random request id ("req_" + 26 base32
// characters), used when neither the envelope nor the transport names one.
func NewRequestID() string { return "req_" + rand.Text() }

// Timestamp formats t the way every timestamp on the wire is written:
// ISO 8601 in UTC with milliseconds ("2024-04-19T10:30:00.000Z").
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
