package sdk

import (
	"bytes"
	"encoding/json"
)

// Handle runs a typed skill handler: it decodes the call's JSON input into In
// (leniently: unknown fields are ignored, the host has already validated the
// input against the skill's input_schema; empty input leaves In at its zero
// value), calls fn, and writes Out as the JSON output. It returns 0 on success.
// If fn returns an error, Handle sets a structured error
// {"message":…,"code":…,"data":…} and returns 1; input that does not decode
// into In fails with code "invalid_input". An *Interrupt (AskInput,
// NeedAuth) is not a failure: it ends an A2A task's turn asking the caller
// (see task.go), with no output. A panic in fn is deliberately not
// recovered: it traps and the host reports the call as a trap.
//
// Use it as the body of a //go:wasmexport function:
//
//	//go:wasmexport uppercase
//	func uppercase() int32 { return sdk.Handle(upper) }
func Handle[In any, Out any](fn func(ctx *Context, in In) (Out, error)) int32 {
	return handle(current, fn)
}

// HandleRaw is Handle for handlers that want the input bytes as they are and
// produce output bytes themselves.
func HandleRaw(fn func(ctx *Context, in []byte) ([]byte, error)) int32 {
	return handleRaw(current, fn)
}

func handle[In any, Out any](b backend, fn func(ctx *Context, in In) (Out, error)) int32 {
	return handleRaw(b, func(ctx *Context, raw []byte) ([]byte, error) {
		var in In
		if len(bytes.TrimSpace(raw)) > 0 {
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, InvalidInput("input does not decode: %v", err)
			}
		}
		out, err := fn(ctx, in)
		if !isNil(err) {
			return nil, err
		}
		enc, err := json.Marshal(out)
		if err != nil {
			return nil, Errorf(CodeEncode, "output does not encode as JSON: %v", err)
		}
		return enc, nil
	})
}

func handleRaw(b backend, fn func(ctx *Context, in []byte) ([]byte, error)) int32 {
	if b == nil {
		panic("sdk: no Extism host (build the plugin with GOOS=wasip1 GOARCH=wasm)")
	}
	ctx := &Context{t: b}
	out, err := fn(ctx, b.input())
	if i, ok := asInterrupt(err); ok { // the turn ends asking for input: no output
		if err = interrupt(b, i); isNil(err) {
			return 0
		}
	}
	if !isNil(err) {
		b.setError(encodeError(err))
		return 1
	}
	b.output(out)
	return 0
}

// isNil reports whether err is nil, counting a nil *Error stored in the error
// interface as nil (returning `var e *Error` is almost always meant as success).
func isNil(err error) bool {
	if err == nil {
		return true
	}
	e, ok := err.(*Error)
	return ok && e == nil
}
