package sdk

// Error codes the host's functions fail with (Error.Code of an error
// returned by Context.Fetch, Get, Set, Progress). Compare with them rather
// than with string literals:
//
//	if errors.As(err, &e) && e.Code == sdk.CodeHostNotAllowed { … }
const (
	// CodeHostCall marks a failure of the host-call machinery itself (no
	// reply, unreadable reply); host-reported failures keep the host's code.
	CodeHostCall = "host_call"

	CodeBadPointer       = "bad_pointer"        // the request offset is not a live Extism block
	CodeRequestTooLarge  = "request_too_large"  // the request (or progress data, or POST body) is over its cap
	CodeBadRequest       = "bad_request"        // the request is not the expected JSON, or a field is invalid
	CodeRateLimited      = "rate_limited"       // log or progress called too often
	CodeNoSession        = "no_session"         // context functions called in a call without a session
	CodeSessionNotFound  = "session_not_found"  // the session is unknown or closed
	CodeValueTooLarge    = "value_too_large"    // the context value is over the store's cap
	CodeUnavailable      = "unavailable"        // the host has no context store configured
	CodeStoreError       = "store_error"        // the state store failed
	CodeHostNotAllowed   = "host_not_allowed"   // the URL's (or a redirect's) host is not in allowed_hosts
	CodeAddressRefused   = "address_refused"    // the host resolved to an internal address
	CodeResponseTooLarge = "response_too_large" // response body or headers over the cap
	CodeTimeout          = "timeout"            // the fetch or the store call ran out of time
	CodeFetchFailed      = "fetch_failed"       // connection, TLS or protocol failure; too many redirects
	CodeAgentNotAllowed  = "agent_not_allowed"  // the agent is not in the manifest's permissions.agents

	// Codes of a failed CallAgent besides the ones above (the failure's
	// reason; see the README's error table for every one).
	CodeCallDepth       = "call_depth"       // the chain of agent calls is at agents.max_call_depth
	CodeCircuitOpen     = "circuit_open"     // the remote agent's circuit breaker is open
	CodePeerUnavailable = "peer_unavailable" // the remote agent could not be reached or used
	CodeUnknownAgent    = "unknown_agent"    // no such plugin or remote agent
	CodeScopeDenied     = "scope_denied"     // the original caller's key may not call that agent

	// CodeInternal is a host bug (details in the host log); the SDK also
	// uses it for a plain (non-*Error) error returned by a skill.
	CodeInternal = "internal"
)
