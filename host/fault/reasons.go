package fault

// Reasons are the machine-readable `reason` strings of error data. They are
// part of the public contract: docs/reference/errors.md lists each one with
// its code (a test compares the two). Add, never rename. No other package
// declares a reason.
const (
	// JSON-RPC envelope and params.
	ReasonParse          = "parse_error"          // body is not JSON
	ReasonInvalidRequest = "invalid_request"      // envelope is not JSON-RPC 2.0
	ReasonBodyTooLarge   = "body_too_large"       // request body over the limit
	ReasonBatchTooLarge  = "batch_too_large"      // batch longer than the limit
	ReasonEmptyBatch     = "empty_batch"          // "[]"
	ReasonStreamBatch    = "stream_not_batchable" // streaming method in a batch or notification
	ReasonUnknownMethod  = "unknown_method"       // no such JSON-RPC method
	ReasonInvalidParams  = "invalid_params"       // params malformed or missing
	ReasonVersion        = "unsupported_version"  // envelope version or A2A-Version refused
	ReasonInternal       = "internal"             // a host bug or failure (details logged)
	ReasonCanceled       = "canceled"             // the caller canceled

	// Skills and the sandbox.
	ReasonSchema        = "schema"         // params fail the input schema
	ReasonUnknownSkill  = "unknown_skill"  // no such skill
	ReasonUnknownAgent  = "unknown_agent"  // agent/call or a card names no loaded plugin
	ReasonUnknownTenant = "unknown_tenant" // an A2A tenant names no loaded plugin
	ReasonTimeout       = "timeout"        // deadline exceeded
	ReasonMemoryLimit   = "memory_limit"   // linear memory cap hit
	ReasonOutputLimit   = "output_limit"   // output (or a batch's responses) larger than the cap
	ReasonPoolSaturated = "pool_saturated" // no instance (or task slot) free within the wait
	ReasonRateLimited   = "rate_limited"   // a rate limit refused the call
	ReasonCallDepth     = "call_depth"     // nested agent calls too deep
	ReasonTrap          = "trap"           // guest trap or panic
	ReasonPluginError   = "plugin_error"   // the plugin reported an error
	ReasonOutputSchema  = "output_schema"  // output does not match output_schema
	ReasonModuleClosed  = "module_closed"  // plugin unloaded while the call waited
	ReasonPluginLoading = "plugin_loading" // the skill's plugin is compiling (hot reload); retry shortly

	// Remote agents (agents.remote).
	ReasonCircuitOpen     = "circuit_open"     // the peer's circuit breaker is open (or its half-open probes are taken)
	ReasonPeerUnavailable = "peer_unavailable" // the peer could not be reached or used: down, 5xx, bad card, credentials refused

	// Sessions and context.
	ReasonSessionNotFound = "session_not_found"
	ReasonSessionClosed   = "session_closed"
	ReasonSessionExists   = "session_exists"
	ReasonContextNotFound = "context_not_found"
	ReasonContextExpired  = "context_expired"
	ReasonValueTooLarge   = "value_too_large" // context value over store.max_value
	ReasonStorageFull     = "storage_full"    // a state bucket is full
	// ReasonStoreUnavailable: the state store did not answer (a NATS node
	// failing over, the cluster without quorum); retryable.
	ReasonStoreUnavailable = "store_unavailable"
	ReasonSessionQuota     = "session_quota" // a session's context quota is used up

	// Plans.
	ReasonPlanNotFound        = "plan_not_found"       // no such plan in this session
	ReasonPlanExists          = "plan_exists"          // plan/create with an id in use
	ReasonPlanExecuting       = "plan_executing"       // plan/execute on a running plan
	ReasonPlanCompleted       = "plan_completed"       // plan/execute on a completed plan
	ReasonPlanNotExecuting    = "plan_not_executing"   // plan/cancel on a plan that is not running
	ReasonPlanContended       = "plan_contended"       // too many concurrent updates of one plan
	ReasonRedeliveryExhausted = "redelivery_exhausted" // a step job was delivered plans.max_deliver times
	ReasonInvalidDependency   = "invalid_dependency"   // depends_on names an unknown step, the step itself, or forms a cycle
	ReasonInvalidReference    = "invalid_reference"    // a ${…} reference is malformed, unknown, not a dependency, or misses plan input
	ReasonReferenceMissing    = "reference_missing"    // at run time a ${steps…} reference names a path the output does not have
	ReasonParamsTooLarge      = "params_too_large"     // a step's params, references resolved, exceed the cap
	// ReasonQuarantined: a job (a plan step) was running when its host died
	// plans.max_crashes times; it is not run again.
	ReasonQuarantined = "quarantined"

	// Events.
	ReasonTooManySubscribers = "too_many_subscribers" // the host's stream cap: events.max_subscribers (GET /events) or a2a.max_streams (task streams)

	// A2A tasks and cards.
	ReasonTaskNotFound              = "task_not_found"
	ReasonTaskExists                = "task_exists"        // a task id is already stored
	ReasonTaskContended             = "task_contended"     // too many concurrent updates of one task
	ReasonTaskTerminal              = "task_terminal"      // the task already ended
	ReasonInvalidTransition         = "invalid_transition" // a task state change the state machine forbids
	ReasonTaskContinuation          = "task_continuation"  // a follow-up message to a task that does not wait for one (terminal, or working)
	ReasonInputTimeout              = "input_timeout"      // a task waited longer than a2a.input_timeout for a follow-up message (it failed)
	ReasonPushNotSupported          = "push_not_supported"
	ReasonPushLimit                 = "push_limit"            // a2a.push.max_per_task or max_per_key push configs are stored
	ReasonPushConfigNotFound        = "push_config_not_found" // no push config with this id on the task
	ReasonContentType               = "content_type"          // a part or output mode other than JSON or text
	ReasonExtendedCardNotConfigured = "extended_card_not_configured"

	// Responses.
	ReasonResponseBudget = "response_budget" // the host-wide budget of response bytes in flight is used up

	// Task leases and shutdown.
	// ReasonHostLost: the host running a task was lost before the task
	// ended (it crashed, was cut off from NATS past a2a.lease_ttl, or shut
	// down); the task ends failed.
	ReasonHostLost = "host_lost"
	// ReasonDraining: the host is shutting down and takes no new tasks;
	// retry on another host.
	ReasonDraining = "draining"

	// Access.
	ReasonLoopbackOnly       = "loopback_only"          // non-loopback client and no API keys (HTTP 403)
	ReasonUnauthenticated    = "unauthenticated"        // no credentials (HTTP 401)
	ReasonInvalidCredentials = "invalid_credentials"    // no key or live session token matches (HTTP 401)
	ReasonTokenRevoked       = "token_revoked"          // the session token's session is closed (HTTP 401)
	ReasonScopeDenied        = "scope_denied"           // the key's scopes do not grant the call (HTTP 403)
	ReasonOriginDenied       = "origin_denied"          // browser request from an origin not allowed (HTTP 403)
	ReasonHostDenied         = "host_denied"            // Host header names no address of this host (HTTP 403)
	ReasonMediaType          = "unsupported_media_type" // state-changing request that is not JSON (HTTP 415)
	ReasonKeyQuota           = "key_quota"              // a key's quota is used up: open sessions, context bytes, stored tasks or plans, or its share of a counted resource (streams, MCP sessions, a client address's connections)

	// Default reasons of kinds raised without a specific reason (see
	// Error.WireReason); the code always names a specific one.
	ReasonSkillFailed              = "skill_failed"
	ReasonUnauthorized             = "unauthorized"
	ReasonForbidden                = "forbidden"
	ReasonResourceExhausted        = "resource_exhausted"
	ReasonInvalidState             = "invalid_state"
	ReasonUnsupportedOperation     = "unsupported_operation"
	ReasonInvalidAgentResponse     = "invalid_agent_response"
	ReasonExtensionSupportRequired = "extension_support_required"
)

// reasonKinds lists every reason with the kinds it is raised with: the pairs
// a client may see. docs/reference/errors.md lists the same pairs, and a test
// checks that every fault.New/Newf/Wrap in the host names one of them.
var reasonKinds = map[string][]Kind{
	ReasonParse:          {Parse},
	ReasonInvalidRequest: {InvalidRequest},
	ReasonBodyTooLarge:   {InvalidRequest},
	ReasonBatchTooLarge:  {InvalidRequest},
	ReasonEmptyBatch:     {InvalidRequest},
	ReasonStreamBatch:    {InvalidRequest},
	ReasonUnknownMethod:  {MethodNotFound},
	ReasonInvalidParams:  {InvalidParams},
	ReasonVersion:        {InvalidParams, VersionNotSupported},
	ReasonInternal:       {Internal},
	ReasonCanceled:       {Canceled},

	ReasonSchema:        {InvalidParams},
	ReasonUnknownSkill:  {InvalidParams},
	ReasonUnknownAgent:  {AgentNotFound},
	ReasonUnknownTenant: {InvalidParams},
	ReasonTimeout:       {Timeout},
	ReasonInputTimeout:  {Timeout},
	ReasonMemoryLimit:   {ResourceExhausted},
	ReasonOutputLimit:   {ResourceExhausted},
	ReasonPoolSaturated: {ResourceExhausted},
	ReasonRateLimited:   {ResourceExhausted},
	ReasonCallDepth:     {ResourceExhausted},
	ReasonTrap:          {SkillFailed},
	ReasonPluginError:   {SkillFailed},
	ReasonOutputSchema:  {SkillFailed},
	ReasonModuleClosed:  {InvalidState},
	ReasonPluginLoading: {InvalidState},

	ReasonCircuitOpen:     {AgentNotFound},
	ReasonPeerUnavailable: {AgentNotFound},

	ReasonSessionNotFound:  {SessionNotFound},
	ReasonSessionClosed:    {SessionNotFound, InvalidState},
	ReasonSessionExists:    {InvalidState},
	ReasonContextNotFound:  {InvalidParams},
	ReasonContextExpired:   {InvalidParams},
	ReasonValueTooLarge:    {InvalidParams},
	ReasonStorageFull:      {ResourceExhausted},
	ReasonStoreUnavailable: {Internal},
	ReasonSessionQuota:     {ResourceExhausted},

	ReasonPlanNotFound:        {PlanNotFound},
	ReasonPlanExists:          {InvalidState},
	ReasonPlanExecuting:       {InvalidState},
	ReasonPlanCompleted:       {InvalidState},
	ReasonPlanNotExecuting:    {InvalidState},
	ReasonPlanContended:       {InvalidState},
	ReasonRedeliveryExhausted: {ResourceExhausted},
	ReasonInvalidDependency:   {InvalidParams},
	ReasonInvalidReference:    {InvalidParams},
	ReasonReferenceMissing:    {InvalidParams},
	ReasonParamsTooLarge:      {ResourceExhausted},
	ReasonQuarantined:         {ResourceExhausted},

	ReasonTooManySubscribers: {ResourceExhausted},

	ReasonTaskNotFound:              {TaskNotFound},
	ReasonTaskExists:                {InvalidState},
	ReasonTaskContended:             {InvalidState},
	ReasonTaskTerminal:              {TaskNotCancelable, UnsupportedOperation, InvalidState},
	ReasonInvalidTransition:         {InvalidState},
	ReasonTaskContinuation:          {UnsupportedOperation},
	ReasonPushNotSupported:          {PushNotSupported},
	ReasonPushLimit:                 {ResourceExhausted},
	ReasonPushConfigNotFound:        {TaskNotFound},
	ReasonContentType:               {ContentTypeNotSupported},
	ReasonExtendedCardNotConfigured: {ExtendedCardNotConfigured},

	ReasonResponseBudget: {ResourceExhausted},

	ReasonHostLost: {Internal},
	ReasonDraining: {ResourceExhausted},

	ReasonLoopbackOnly:       {Forbidden},
	ReasonUnauthenticated:    {Unauthorized},
	ReasonInvalidCredentials: {Unauthorized},
	ReasonTokenRevoked:       {Unauthorized},
	ReasonScopeDenied:        {Forbidden},
	ReasonOriginDenied:       {Forbidden},
	ReasonHostDenied:         {Forbidden},
	ReasonMediaType:          {InvalidRequest},
	ReasonKeyQuota:           {ResourceExhausted},

	ReasonSkillFailed:              {SkillFailed},
	ReasonUnauthorized:             {Unauthorized},
	ReasonForbidden:                {Forbidden},
	ReasonResourceExhausted:        {ResourceExhausted},
	ReasonInvalidState:             {InvalidState},
	ReasonUnsupportedOperation:     {UnsupportedOperation},
	ReasonInvalidAgentResponse:     {InvalidAgentResponse},
	ReasonExtensionSupportRequired: {ExtensionSupportRequired},
}

// Declared reports whether reason is declared for kind k: a pair a client
// may see. A reason received from elsewhere (a remote skillhost) is passed
// on only when it is.
func Declared(reason string, k Kind) bool {
	for _, x := range reasonKinds[reason] {
		if x == k {
			return true
		}
	}
	return false
}

// WireReason is the reason sent to clients: Reason, or the default reason of
// the error's kind when it has none.
func (e *Error) WireReason() string {
	if e.Reason != "" {
		return e.Reason
	}
	return e.Kind.row().reason
}
