package auth

import "context"

// Invocation is the identity of one call: who makes it, in which session,
// under which request id, by which method. It travels down in the call's
// context and is read with InvocationFrom (From is its principal); nothing
// below the edge that attached it writes it.
//
// It is attached in two steps, each once: the transport attaches the
// principal it authenticated (With), and the host's outermost engine
// middleware the rest of the call, which only the decoded request has
// (Invoke). A call the host makes on its own behalf (a plan step, an
// agent/notify delivery, a plugin's nested agent_call) attaches the
// Invocation it runs as the same way, where it starts.
type Invocation struct {
	// Principal is whom the call acts for (With); the zero principal when
	// none is attached.
	Principal Principal
	// SessionID is the calling session: the envelope's session_id, a plan's
	// or a notification's session; "" for none.
	SessionID string
	// RequestID attributes the call in logs, error data and the failure
	// ring: the envelope's request_id, else the transport's.
	RequestID string
	// Method is the method the call came in by ("" for work the host
	// started itself: plan steps).
	Method string
}

type invocationKey struct{}

// invocation is what ctx carries: the Invocation, and whether a principal
// was attached (a zero principal may be attached on purpose).
type invocation struct {
	inv       Invocation
	principal bool
}

func lookup(ctx context.Context) invocation {
	v, _ := ctx.Value(invocationKey{}).(invocation)
	return v
}

// Invoke returns a copy of ctx carrying inv as the identity of the call it
// starts. The principal stays the one attached (With): inv.Principal is
// ignored, so a call cannot change whom it acts for.
func Invoke(ctx context.Context, inv Invocation) context.Context {
	v := lookup(ctx)
	inv.Principal = v.inv.Principal
	v.inv = inv
	return context.WithValue(ctx, invocationKey{}, v)
}

// InvocationFrom returns the identity of the call on ctx: the zero
// Invocation when none is attached.
func InvocationFrom(ctx context.Context) Invocation { return lookup(ctx).inv }
