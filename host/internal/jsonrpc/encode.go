package jsonrpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

var nullID = json.RawMessage("null")

// EncodeResult encodes a success response for id (nil encodes as null). If v
// cannot be encoded as JSON the response is a -32603 error instead.
func EncodeResult(id json.RawMessage, v any) []byte {
	b, err := encodeResult(id, v)
	if err != nil {
		return encodeFault(id, Envelope{}, "", fault.Wrap(fault.Internal, fault.ReasonInternal, err, "internal error"), fault.DataAuto)
	}
	return b
}

// Encoded is a result its handler has already encoded as compact JSON,
// as encoding/json would have (HTML characters escaped): the engine writes
// it into the response as it is, so a result is encoded once. Other
// bindings that marshal a result get the same bytes (MarshalJSON).
type Encoded []byte

// MarshalJSON returns e (null when empty).
func (e Encoded) MarshalJSON() ([]byte, error) {
	if len(e) == 0 {
		return nullID, nil
	}
	return e, nil
}

// EncodedJSON returns e (PreEncoded).
func (e Encoded) EncodedJSON() []byte { return e }

// PreEncoded is a result already encoded (Encoded, or a type embedding it
// that says more about the call, such as the skill it reached).
type PreEncoded interface {
	EncodedJSON() []byte
}

// Appender is a result that encodes itself into the response: it appends
// its compact JSON (as encoding/json would write it, HTML characters
// escaped) to dst, and SizeHint is about how many bytes that takes. The
// engine writes it between the response's framing in one buffer; other
// bindings marshal it (it should implement json.Marshaler too).
type Appender interface {
	AppendJSON(dst []byte) []byte
	SizeHint() int
}

// resultPrefix and resultSuffix frame a result.
const resultPrefix, resultSuffix = `{"jsonrpc":"2.0","result":`, `,"id":`

func encodeResult(id json.RawMessage, v any) ([]byte, error) {
	if ap, ok := v.(Appender); ok {
		buf := make([]byte, 0, len(resultPrefix)+ap.SizeHint()+len(resultSuffix)+len(id)+8)
		buf = append(buf, resultPrefix...)
		n := len(buf)
		if buf = ap.AppendJSON(buf); len(buf) == n {
			buf = append(buf, nullID...)
		}
		buf = append(append(buf, resultSuffix...), idOrNull(id)...)
		return append(buf, '}'), nil
	}
	var res []byte
	if pe, ok := v.(PreEncoded); ok {
		res = pe.EncodedJSON()
	}
	if len(res) == 0 {
		var err error
		if res, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("encode result: %w", err)
		}
	}
	var buf bytes.Buffer
	buf.Grow(len(res) + len(id) + 40)
	buf.WriteString(resultPrefix)
	buf.Write(res)
	buf.WriteString(resultSuffix)
	buf.Write(idOrNull(id))
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// EncodeError encodes an error response for id (nil encodes as null). err is
// classified by fault.Safe; env and the ctx's TransportInfo supply the
// request_id and session_id of the error data.
func EncodeError(ctx context.Context, id json.RawMessage, env Envelope, err error) []byte {
	fe, _ := fault.Safe(err)
	return encodeFault(id, env, TransportFrom(ctx).RequestID, fe, fault.DataAuto)
}

// encodeFault encodes an error response with `data` in style: the error
// member is fault's (Error.MarshalRPC); the request id is the envelope's,
// else the transport's, else a new one.
func encodeFault(id json.RawMessage, env Envelope, transportRID string, fe *fault.Error, style fault.DataStyle) []byte {
	body := fe.MarshalRPC(meta(env, transportRID), style)
	var buf bytes.Buffer
	buf.Grow(len(body) + len(id) + 40)
	buf.WriteString(`{"jsonrpc":"2.0","error":`)
	buf.Write(body)
	buf.WriteString(`,"id":`)
	buf.Write(idOrNull(id))
	buf.WriteByte('}')
	return buf.Bytes()
}

// ErrorMeta is what an error answering a request on ctx carries of it (for
// the shapes of the protocol's other bindings): the transport's request id,
// else a new one.
func ErrorMeta(ctx context.Context) fault.Meta { return meta(Envelope{}, TransportFrom(ctx).RequestID) }

// RequestID is the request id of req on ctx: the envelope's request_id,
// else the transport's ("" when neither has one). It is the one rule; the
// host puts its answer into the call's Invocation (auth.Invoke), and error
// data follow it too (with a fresh id when it is "").
func RequestID(ctx context.Context, req *Request) string {
	return requestID(req.Meta, TransportFrom(ctx).RequestID)
}

func requestID(env Envelope, transportRID string) string {
	if env.RequestID != "" {
		return env.RequestID
	}
	return transportRID
}

// meta is what an error answering a request carries of it: the request id
// of the envelope, else of the transport (transportRID), else a new one,
// and the envelope's session.
func meta(env Envelope, transportRID string) fault.Meta {
	rid := requestID(env, transportRID)
	if rid == "" {
		rid = NewRequestID()
	}
	return fault.Meta{RequestID: rid, SessionID: env.SessionID, Time: time.Now()}
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nullID
	}
	return id
}

// NewRequestID returns a fresh random request id ("req_" + 26 base32
// characters), used when neither the envelope nor the transport names one.
func NewRequestID() string { return "req_" + rand.Text() }

// Timestamp formats t the way every timestamp on the wire is written:
// ISO 8601 in UTC with milliseconds ("2024-04-19T10:30:00.000Z"), as
// fault.Timestamp.
func Timestamp(t time.Time) string { return fault.Timestamp(t) }
