package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// class says what an attempt's failure means for retries, the breaker and
// fallbacks.
type class uint8

const (
	// final: the peer answered for good (invalid params, a failed skill):
	// no retry, no fallback; the breaker counts a success (the peer works).
	final class = iota
	// transient: may go away (connection refused or reset, 5xx, 429, a
	// timeout, a saturated pool): retried, a breaker failure, then the
	// fallbacks.
	transient
	// unusable: the peer cannot serve the call as configured (credentials
	// refused, no usable interface, an unreadable answer): not retried, a
	// breaker failure, then the fallbacks.
	unusable
	// gone: the caller's deadline passed or it canceled: nothing more is
	// tried and the breaker does not count it.
	gone
)

// failure is a classified failure of a peer call. It wraps the *fault.Error
// the caller sees (fault.From finds it).
type failure struct {
	class class
	fe    *fault.Error
}

func (f *failure) Error() string { return f.fe.Error() }
func (f *failure) Unwrap() error { return f.fe }

// Retryable reports whether the same call may succeed later (a plan step's
// retry policy asks): transient failures and an open breaker.
func (f *failure) Retryable() bool {
	return f.class == transient || f.fe.Reason == fault.ReasonCircuitOpen
}

// Fallible reports whether err, from Peers.Call, lets the caller try a
// fallback agent: the peer failed retryably (after its retries), could not
// be used, or its breaker is open.
func Fallible(err error) bool {
	var f *failure
	return errors.As(err, &f) && (f.class == transient || f.class == unusable)
}

func fail(c class, fe *fault.Error) *failure { return &failure{class: c, fe: fe} }

func classOf(err error) class {
	var f *failure
	if errors.As(err, &f) {
		return f.class
	}
	return final
}

// unavailable is a peer_unavailable fault.
func unavailable(id, format string, args ...any) *fault.Error {
	return fault.Newf(fault.AgentNotFound, fault.ReasonPeerUnavailable, "remote agent %q: "+format, append([]any{id}, args...)...).
		With("agent_id", id)
}

// transportFailure classifies an error of the HTTP exchange itself.
func transportFailure(id string, err error) *failure {
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	switch {
	case errors.Is(err, errTooLarge):
		return fail(final, fault.Newf(fault.ResourceExhausted, fault.ReasonOutputLimit,
			"remote agent %q answered with more than its max_response", id).With("agent_id", id).With("limit", "agents.remote[].max_response"))
	case errors.Is(err, errHostNotAllowed):
		return fail(unusable, unavailable(id, "its card names an interface on a host outside its url and hosts"))
	case hostfn.IsAddressRefused(err):
		return fail(unusable, unavailable(id, "its host resolves to an internal address; allow it with allow_private"))
	case errors.As(err, &certErr), errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr):
		return fail(unusable, unavailable(id, "its TLS certificate is not trusted"))
	}
	return fail(transient, unavailable(id, "unreachable (%s)", netReason(err)))
}

// statusFailure classifies a non-200 HTTP status.
func statusFailure(id string, status int) *failure {
	switch {
	case status >= 500 || status == http.StatusTooManyRequests:
		return fail(transient, unavailable(id, "answered HTTP %d", status).With("http_status", status))
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fail(unusable, unavailable(id, "refused this host's credentials (HTTP %d)", status).With("http_status", status))
	case status == http.StatusRequestEntityTooLarge:
		return fail(final, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams,
			"remote agent %q refused the request as too large (HTTP 413)", id).With("agent_id", id).With("http_status", status))
	}
	return fail(unusable, unavailable(id, "answered HTTP %d", status).With("http_status", status))
}

// peerError classifies a JSON-RPC error the peer answered with. Its reason
// is passed on only when host/fault declares it for the kind; its message
// is kept; of its data only the plugin's own code and data and the retry
// hint are.
func peerError(id string, pe *fault.Error) *failure {
	reason := pe.Reason
	if !fault.Declared(reason, pe.Kind) {
		reason = ""
	}
	fe := fault.New(pe.Kind, reason, pe.Message()).With("agent_id", id).With("peer_code", pe.Kind.Code())
	if reason == "" && pe.Reason != "" {
		fe = fe.With("peer_reason", truncate(pe.Reason, 64))
	}
	for _, k := range []string{"plugin_code", "plugin_data", "retry_after_ms"} {
		if v, ok := pe.Data[k]; ok {
			fe = fe.With(k, v)
		}
	}
	switch {
	case pe.Kind == fault.Timeout,
		pe.Kind == fault.ResourceExhausted && (reason == fault.ReasonPoolSaturated || reason == fault.ReasonRateLimited),
		pe.Kind == fault.Internal && reason == fault.ReasonStoreUnavailable:
		return fail(transient, fe)
	case pe.Kind == fault.Unauthorized || pe.Kind == fault.Forbidden:
		return fail(unusable, unavailable(id, "refused this host's credentials: %s", truncate(pe.Message(), 200)).
			With("peer_code", pe.Kind.Code()))
	case pe.Kind == fault.MethodNotFound:
		return fail(unusable, unavailable(id, "does not serve the method: %s", truncate(pe.Message(), 200)).
			With("peer_code", pe.Kind.Code()))
	case pe.Kind == fault.AgentNotFound && (reason == fault.ReasonCircuitOpen || reason == fault.ReasonPeerUnavailable):
		return fail(unusable, fe) // the peer's own peer: it retried already
	}
	return fail(final, fe)
}

// invalidAnswer is an answer that is not what the protocol promises.
func invalidAnswer(id string, format string, args ...any) *failure {
	return fail(unusable, fault.Newf(fault.InvalidAgentResponse, fault.ReasonInvalidAgentResponse,
		"remote agent %q: "+format, append([]any{id}, args...)...).With("agent_id", id))
}

// endedFailure classifies an attempt whose context ended: the caller's
// (gone) or only the attempt's own attempt_timeout (transient).
func endedFailure(caller, attempt context.Context, id string, attemptTimeout time.Duration) *failure {
	if err := caller.Err(); err != nil {
		fe := fault.From(err).With("agent_id", id)
		if errors.Is(err, context.DeadlineExceeded) {
			fe = fault.Newf(fault.Timeout, fault.ReasonTimeout, "remote agent %q did not answer within the call's deadline", id).With("agent_id", id)
		}
		return fail(gone, fe)
	}
	if errors.Is(attempt.Err(), context.DeadlineExceeded) {
		return fail(transient, fault.Newf(fault.Timeout, fault.ReasonTimeout,
			"remote agent %q did not answer within attempt_timeout (%v)", id, attemptTimeout).With("agent_id", id))
	}
	return nil
}

// circuitOpen is the refusal of an open (or saturated half-open) breaker.
func circuitOpen(id string, retryIn time.Duration) *failure {
	fe := fault.Newf(fault.AgentNotFound, fault.ReasonCircuitOpen,
		"remote agent %q is isolated: its circuit breaker is open after repeated failures", id).With("agent_id", id)
	if retryIn > 0 {
		fe = fe.With("retry_after_ms", retryIn.Milliseconds())
	}
	return fail(unusable, fe)
}

// netReason names the kind of a network failure, never an address or a
// system error (those go to the host log): callers know the agent id only.
func netReason(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed early"
	case errors.As(err, &dnsErr):
		return "name not resolved"
	}
	return "network error"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Retryable reports whether err, from Peers.Call, may succeed when the same
// call is made later (a plan step's retry policy): a transient failure or an
// open breaker.
func Retryable(err error) bool {
	var f *failure
	return errors.As(err, &f) && f.Retryable()
}
