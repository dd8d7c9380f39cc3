// Package fault is the one error taxonomy of skillhost.
//
// Every outcome a caller can observe — a timeout, a memory cap hit, a trap, an
// unknown session, a bad parameter — is a *Error carrying a Kind and a
// machine-readable Reason. The Kind decides, in exactly one table (kinds.go),
// the JSON-RPC code, the default message, the A2A task state, the HTTP
// status, the gRPC code name and the A2A ErrorInfo reason; a few reasons
// have an HTTP status of their own (reasonRules). No other package writes a
// numeric error code or an HTTP status for an error.
//
// Every wire shape of an error is encoded here (encode.go): the JSON-RPC
// error member (Error.MarshalRPC), google.rpc.ErrorInfo (Error.Info), the
// A2A HTTP+JSON binding's google.rpc.Status (Error.MarshalStatus) and the
// Summary inside results; Decode reads a JSON-RPC error back. The guest
// ABI's codes are declared here too (guest.go); the SDK's are generated
// from them.
//
//	if err := validate(p); err != nil {
//		return fault.Newf(fault.InvalidParams, fault.ReasonSchema, "params: %v", err)
//	}
//
// Errors compare by kind: errors.Is(err, fault.ErrTimeout) is true for any
// *Error of kind Timeout, whatever its reason or message.
package fault
