package fault

import "net/http"

// Kind classifies an outcome. The zero value is Internal.
type Kind uint8

// The kinds, in the order of the error table in docs/reference/errors.md.
const (
	Internal       Kind = iota // -32603: a bug or an unexpected host failure
	Parse                      // -32700: the bytes are not JSON
	InvalidRequest             // -32600: not a valid JSON-RPC request
	MethodNotFound             // -32601
	InvalidParams              // -32602: params fail validation; unknown skill
	Canceled                   // -32000: the caller canceled the call

	SessionNotFound   // -32100: unknown or closed session
	PlanNotFound      // -32101
	AgentNotFound     // -32102
	SkillFailed       // -32103: trap, panic, plugin-reported error
	Timeout           // -32104: the call exceeded its deadline
	Unauthorized      // -32105 (HTTP 401): missing or invalid credentials
	Forbidden         // -32105 (HTTP 403): scope denied
	ResourceExhausted // -32106: memory, output, pool, rate or depth cap
	InvalidState      // -32107: operation invalid in the current state

	TaskNotFound              // -32001 (A2A)
	TaskNotCancelable         // -32002 (A2A)
	PushNotSupported          // -32003 (A2A)
	UnsupportedOperation      // -32004 (A2A)
	ContentTypeNotSupported   // -32005 (A2A)
	InvalidAgentResponse      // -32006 (A2A)
	ExtendedCardNotConfigured // -32007 (A2A)
	ExtensionSupportRequired  // -32008 (A2A)
	VersionNotSupported       // -32009 (A2A)

	numKinds
)

// row is one line of the error table.
type row struct {
	name      string
	code      int
	message   string
	taskState string // A2A v1.0 task state a task ends in ("" = not a task outcome)
	http      int    // HTTP status for transports that map errors to statuses
	reason    string // default reason, for an error raised without one
	grpc      string // google.rpc.Code name (the A2A HTTP+JSON binding's error "status")
	a2a       string // the A2A ErrorInfo reason (domain a2a-protocol.org); SERVER_ERROR for skillhost's own kinds
}

// serverError is the A2A ErrorInfo reason of skillhost's own kinds: A2A
// defines none for them, and the JSON-RPC range they stand for is reserved
// for implementation-defined server errors (a2a-go's ErrServerError). The
// ErrorInfo's metadata.reason says which.
const serverError = "SERVER_ERROR"

// table is THE map from outcome to wire representation. It is the only place
// in skillhost where a numeric JSON-RPC code appears.
var table = [numKinds]row{
	Internal:       {"Internal", -32603, "Internal error", "TASK_STATE_FAILED", http.StatusInternalServerError, ReasonInternal, "INTERNAL", "INTERNAL_ERROR"},
	Parse:          {"Parse", -32700, "Parse error", "", http.StatusBadRequest, ReasonParse, "INVALID_ARGUMENT", "PARSE_ERROR"},
	InvalidRequest: {"InvalidRequest", -32600, "Invalid Request", "", http.StatusBadRequest, ReasonInvalidRequest, "INVALID_ARGUMENT", "INVALID_REQUEST"},
	MethodNotFound: {"MethodNotFound", -32601, "Method not found", "", http.StatusNotFound, ReasonUnknownMethod, "UNIMPLEMENTED", "METHOD_NOT_FOUND"},
	InvalidParams:  {"InvalidParams", -32602, "Invalid params", "TASK_STATE_REJECTED", http.StatusBadRequest, ReasonInvalidParams, "INVALID_ARGUMENT", "INVALID_PARAMS"},
	Canceled:       {"Canceled", -32000, "Request canceled", "TASK_STATE_CANCELED", 499, ReasonCanceled, "CANCELLED", serverError},

	SessionNotFound:   {"SessionNotFound", -32100, "Session not found", "TASK_STATE_REJECTED", http.StatusNotFound, ReasonSessionNotFound, "NOT_FOUND", serverError},
	PlanNotFound:      {"PlanNotFound", -32101, "Plan not found", "TASK_STATE_REJECTED", http.StatusNotFound, ReasonPlanNotFound, "NOT_FOUND", serverError},
	AgentNotFound:     {"AgentNotFound", -32102, "Agent not found", "TASK_STATE_REJECTED", http.StatusNotFound, ReasonUnknownAgent, "NOT_FOUND", serverError},
	SkillFailed:       {"SkillFailed", -32103, "Skill execution failed", "TASK_STATE_FAILED", http.StatusInternalServerError, ReasonSkillFailed, "INTERNAL", serverError},
	Timeout:           {"Timeout", -32104, "Timeout", "TASK_STATE_FAILED", http.StatusGatewayTimeout, ReasonTimeout, "DEADLINE_EXCEEDED", serverError},
	Unauthorized:      {"Unauthorized", -32105, "Authorization failed", "TASK_STATE_AUTH_REQUIRED", http.StatusUnauthorized, ReasonUnauthorized, "UNAUTHENTICATED", "UNAUTHENTICATED"},
	Forbidden:         {"Forbidden", -32105, "Authorization failed", "TASK_STATE_AUTH_REQUIRED", http.StatusForbidden, ReasonForbidden, "PERMISSION_DENIED", "UNAUTHORIZED"},
	ResourceExhausted: {"ResourceExhausted", -32106, "Resource exhausted", "TASK_STATE_FAILED", http.StatusTooManyRequests, ReasonResourceExhausted, "RESOURCE_EXHAUSTED", serverError},
	InvalidState:      {"InvalidState", -32107, "Invalid state", "", http.StatusConflict, ReasonInvalidState, "FAILED_PRECONDITION", serverError},

	TaskNotFound:              {"TaskNotFound", -32001, "Task not found", "", http.StatusNotFound, ReasonTaskNotFound, "NOT_FOUND", "TASK_NOT_FOUND"},
	TaskNotCancelable:         {"TaskNotCancelable", -32002, "Task cannot be canceled", "", http.StatusConflict, ReasonTaskTerminal, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"},
	PushNotSupported:          {"PushNotSupported", -32003, "Push Notification is not supported", "", http.StatusBadRequest, ReasonPushNotSupported, "UNIMPLEMENTED", "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	UnsupportedOperation:      {"UnsupportedOperation", -32004, "This operation is not supported", "", http.StatusBadRequest, ReasonUnsupportedOperation, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION"},
	ContentTypeNotSupported:   {"ContentTypeNotSupported", -32005, "Incompatible content types", "", http.StatusUnsupportedMediaType, ReasonContentType, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"},
	InvalidAgentResponse:      {"InvalidAgentResponse", -32006, "Invalid agent response", "", http.StatusBadGateway, ReasonInvalidAgentResponse, "INTERNAL", "INVALID_AGENT_RESPONSE"},
	ExtendedCardNotConfigured: {"ExtendedCardNotConfigured", -32007, "Extended agent card not configured", "", http.StatusBadRequest, ReasonExtendedCardNotConfigured, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
	ExtensionSupportRequired:  {"ExtensionSupportRequired", -32008, "Extension support required", "", http.StatusBadRequest, ReasonExtensionSupportRequired, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED"},
	VersionNotSupported:       {"VersionNotSupported", -32009, "Protocol version not supported", "", http.StatusBadRequest, ReasonVersion, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED"},
}

// reasonRule is what a reason changes on the wire: its own HTTP status (and
// the google.rpc.Code name that goes with it) instead of its kind's, or that
// it refuses the caller (see Error.Refusal).
type reasonRule struct {
	http    int
	grpc    string
	refusal bool
}

// reasonRules are the reasons the kind's row does not say everything
// about: a body refused for its size or media type, the host (not the
// caller) out of service or of room, and the caller over its own rate or
// share. Every other reason takes its kind's row.
var reasonRules = map[string]reasonRule{
	ReasonBodyTooLarge:      {http: http.StatusRequestEntityTooLarge},
	ReasonMediaType:         {http: http.StatusUnsupportedMediaType},
	ReasonStoreUnavailable:  {http: http.StatusServiceUnavailable, grpc: "UNAVAILABLE"},
	ReasonResourceExhausted: {http: http.StatusServiceUnavailable, grpc: "UNAVAILABLE"}, // a host-wide cap: retry later
	ReasonDraining:          {http: http.StatusServiceUnavailable, grpc: "UNAVAILABLE"}, // this host shuts down: retry on another
	ReasonRateLimited:       {refusal: true},
	ReasonKeyQuota:          {refusal: true},
}

// Code is the JSON-RPC error code of the kind.
func (k Kind) Code() int { return k.row().code }

// Message is the standard JSON-RPC error message of the kind.
func (k Kind) Message() string { return k.row().message }

// TaskState is the A2A v1.0 task state (e.g. "TASK_STATE_FAILED") a task ends
// in when its execution fails with this kind; "" when the kind is not a task
// outcome (protocol errors are returned to the caller instead).
func (k Kind) TaskState() string { return k.row().taskState }

// HTTPStatus is the kind's HTTP status, for transports that express errors
// as statuses; an error's own status is Error.HTTPStatus (a few reasons have
// theirs, see reasonRules).
func (k Kind) HTTPStatus() int { return k.row().http }

// GRPCStatus is the google.rpc.Code name of the kind (e.g. "NOT_FOUND"); an
// error's own is Error.GRPCStatus.
func (k Kind) GRPCStatus() string { return k.row().grpc }

// A2AReason is the A2A ErrorInfo reason of the kind (e.g. "TASK_NOT_FOUND",
// domain a2a-protocol.org), which A2A clients map back to the protocol's
// errors; "SERVER_ERROR" for skillhost's own kinds (timeout, resource
// exhausted, …), whose reason the ErrorInfo's metadata carries. Never "".
func (k Kind) A2AReason() string { return k.row().a2a }

// String is the kind's Go name, e.g. "ResourceExhausted".
func (k Kind) String() string { return k.row().name }

// IsA2A reports whether the kind is one of the A2A-specific codes -32001..-32009,
// whose error data is an array of google.rpc.ErrorInfo objects.
func (k Kind) IsA2A() bool { return k >= TaskNotFound && k <= VersionNotSupported }

func (k Kind) row() row {
	if k >= numKinds {
		return table[Internal]
	}
	return table[k]
}

// Kinds lists every kind, for tests and documentation generators.
func Kinds() []Kind {
	out := make([]Kind, 0, numKinds)
	for k := Kind(0); k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}

// KindOfCode returns the kind for a JSON-RPC code (Unauthorized for -32105),
// and false when the code is not in the table. Clients use it to turn a
// remote error back into a *Error.
func KindOfCode(code int) (Kind, bool) {
	for k := Kind(0); k < numKinds; k++ {
		if table[k].code == code {
			return k, true
		}
	}
	return Internal, false
}
