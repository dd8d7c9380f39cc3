package fault

//go:generate go test -run TestSDKCodesFile . -args -update

// Guest ABI codes: the `code` of a host function's failed reply,
// {"ok":false,"error":{"code","message","data"}} (docs/HOST_FUNCTIONS.md),
// and of the errors a plugin built with the Go SDK reports. Part of the
// plugin ABI: add, never rename. A code that names an outcome of the error
// table is that outcome's reason; a failed agent_call's code is its
// failure's WireReason (the error table of docs/reference/errors.md). The SDK's constants
// (sdk/codes.go) are generated from guestCodes: go generate ./host/fault.
const (
	GuestBadPointer       = "bad_pointer"
	GuestRequestTooLarge  = "request_too_large"
	GuestBadRequest       = "bad_request"
	GuestRateLimited      = ReasonRateLimited
	GuestNoSession        = "no_session"
	GuestSessionNotFound  = ReasonSessionNotFound
	GuestValueTooLarge    = ReasonValueTooLarge
	GuestUnavailable      = "unavailable"
	GuestStoreError       = "store_error"
	GuestHostNotAllowed   = "host_not_allowed"
	GuestAddressRefused   = "address_refused"
	GuestResponseTooLarge = "response_too_large"
	GuestTimeout          = ReasonTimeout
	GuestFetchFailed      = "fetch_failed"
	GuestAgentNotAllowed  = "agent_not_allowed"
	GuestNotATask         = "not_a_task"
	GuestBadState         = "bad_state"
	GuestInternal         = ReasonInternal

	// The SDK's own: a failure of the host-call machinery, and what a
	// plugin reports (any other code string is allowed too).
	GuestHostCall     = "host_call"
	GuestInvalidInput = "invalid_input"
	GuestEncodeOutput = "encode_output"
)

// guestGroup is where a code is used.
type guestGroup uint8

const (
	guestSDK    guestGroup = iota // the SDK itself: the host-call machinery failed
	guestHost                     // a host function's failure
	guestAgent                    // a failed agent_call's, besides guestHost's: a reason
	guestBoth                     // a host function's failure and a skill's plain error
	guestPlugin                   // what a skill reports through the SDK
)

// guestCode is one row of the guest ABI's code table.
type guestCode struct {
	name  string // the SDK constant's name after "Code": sdk.Code<name>
	code  string
	group guestGroup
	doc   string // the SDK constant's doc
}

// guestCodes is the guest ABI's code table, in the order of sdk/codes.go.
var guestCodes = []guestCode{
	{"HostCall", GuestHostCall, guestSDK, "marks a failure of the host-call machinery itself (no\nreply, unreadable reply); host-reported failures keep the host's code."},

	{"BadPointer", GuestBadPointer, guestHost, "the request offset is not a live Extism block"},
	{"RequestTooLarge", GuestRequestTooLarge, guestHost, "the request (or progress data, or POST body) is over its cap"},
	{"BadRequest", GuestBadRequest, guestHost, "the request is not the expected JSON, or a field is invalid"},
	{"RateLimited", GuestRateLimited, guestHost, "log or progress called too often"},
	{"NoSession", GuestNoSession, guestHost, "context functions called in a call without a session"},
	{"SessionNotFound", GuestSessionNotFound, guestHost, "the session is unknown or closed"},
	{"ValueTooLarge", GuestValueTooLarge, guestHost, "the context value is over the store's cap"},
	{"Unavailable", GuestUnavailable, guestHost, "the host has no context store configured"},
	{"StoreError", GuestStoreError, guestHost, "the state store failed"},
	{"HostNotAllowed", GuestHostNotAllowed, guestHost, "the URL's (or a redirect's) host is not in allowed_hosts"},
	{"AddressRefused", GuestAddressRefused, guestHost, "the host resolved to an internal address"},
	{"ResponseTooLarge", GuestResponseTooLarge, guestHost, "response body or headers over the cap"},
	{"Timeout", GuestTimeout, guestHost, "the fetch or the store call ran out of time"},
	{"FetchFailed", GuestFetchFailed, guestHost, "connection, TLS or protocol failure; too many redirects"},
	{"AgentNotAllowed", GuestAgentNotAllowed, guestHost, "the agent is not in the manifest's permissions.agents"},
	{"NotATask", GuestNotATask, guestHost, "task_history or task_interrupt called outside an A2A task turn"},
	{"BadState", GuestBadState, guestHost, "task_interrupt asked for a state other than input-required or auth-required"},

	{"CallDepth", ReasonCallDepth, guestAgent, "the chain of agent calls is at agents.max_call_depth"},
	{"CircuitOpen", ReasonCircuitOpen, guestAgent, "the remote agent's circuit breaker is open"},
	{"PeerUnavailable", ReasonPeerUnavailable, guestAgent, "the remote agent could not be reached or used"},
	{"UnknownAgent", ReasonUnknownAgent, guestAgent, "no such plugin or remote agent"},
	{"ScopeDenied", ReasonScopeDenied, guestAgent, "the original caller's key may not call that agent"},

	{"Internal", GuestInternal, guestBoth, "is a host bug (details in the host log); the SDK also\nuses it for a plain (non-*Error) error returned by a skill."},

	{"InvalidInput", GuestInvalidInput, guestPlugin, "marks input the skill refuses (see InvalidInput)."},
	{"Encode", GuestEncodeOutput, guestPlugin, "marks an output the SDK could not encode as JSON."},
}
