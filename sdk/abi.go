package sdk

import (
	"encoding/json"
	"fmt"
)

// The host-function ABI (documented in docs/HOST_FUNCTIONS.md): every host
// function lives in the Wasm import namespace "extism:host/user", takes one
// i64 — the offset of an Extism memory block holding a JSON request — and
// returns one i64, the offset of an Extism memory block holding the JSON reply
// envelope {"ok":true,"result":…} or {"ok":false,"error":{"code":…,"message":…}}.
// The request and result types are in internal/wire.

// envelope is the reply of every host function, decoded.
type envelope struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// decodeReply reads a host reply envelope into result (which may be nil).
// A host-reported failure is returned as the host's *Error.
func decodeReply(fn string, reply []byte, result any) error {
	if len(reply) == 0 {
		return &Error{Code: CodeHostCall, Message: fmt.Sprintf("host function %s returned no reply", fn)}
	}
	var env envelope
	if err := json.Unmarshal(reply, &env); err != nil {
		return &Error{Code: CodeHostCall, Message: fmt.Sprintf("host function %s: unreadable reply: %v", fn, err)}
	}
	if !env.OK {
		if env.Error == nil {
			return &Error{Code: CodeHostCall, Message: fmt.Sprintf("host function %s failed without an error", fn)}
		}
		return env.Error
	}
	if result == nil || len(env.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(env.Result, result); err != nil {
		return &Error{Code: CodeHostCall, Message: fmt.Sprintf("host function %s: unreadable result: %v", fn, err)}
	}
	return nil
}
