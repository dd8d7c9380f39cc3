// Package fault is the one error taxonomy of skillhost.
//
// Every outcome a caller can observe — a timeout, a memory cap hit, a trap, an
// unknown session, a bad parameter — is a *Error carrying a Kind and a
// machine-readable Reason. The Kind decides, in exactly one table (kinds.go),
// the JSON-RPC code, the default message, the A2A task state and the HTTP
// status. No other package writes a numeric error code.
//
//	if err := validate(p); err != nil {
//		return fault.Newf(fault.InvalidParams, fault.ReasonSchema, "params: %v", err)
//	}
//
// Errors compare by kind: errors.Is(err, fault.ErrTimeout) is true for any
// *Error of kind Timeout, whatever its reason or message.
package fault
