package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Error is a structured error a skill returns. It crosses the Wasm boundary as
// JSON {"message":…,"code":…,"data":…}; the host reports it to the caller as a
// failed skill (reason "plugin_error") carrying the code and data.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error implements error as "code: message".
func (e *Error) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return e.Code + ": " + e.Message
}

// WithData returns a copy of e carrying data (any JSON-encodable value).
func (e *Error) WithData(data any) *Error {
	c := *e
	c.Data = data
	return &c
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidInput returns an *Error with code "invalid_input".
func InvalidInput(format string, args ...any) *Error {
	return Errorf(CodeInvalidInput, format, args...)
}

// maxErrorBytes caps the encoded error handed to the host.
const maxErrorBytes = 64 << 10

// encodeError turns any error into the JSON the host expects. A plain error
// becomes code "internal"; an *Error anywhere in the chain keeps its code and
// data. Data that cannot be encoded, or that makes the error too large, is
// dropped rather than losing the message.
func encodeError(err error) []byte {
	var e *Error
	if !errors.As(err, &e) || e == nil {
		e = &Error{Code: CodeInternal, Message: err.Error()}
	}
	out := *e
	if out.Message == "" {
		out.Message = err.Error()
	}
	b, mErr := json.Marshal(out)
	if mErr != nil || len(b) > maxErrorBytes {
		out.Data = nil
		if len(out.Message) > maxErrorBytes/2 {
			out.Message = out.Message[:maxErrorBytes/2] + "…"
		}
		b, _ = json.Marshal(out) // strings and nil always encode
	}
	return b
}
