package auth

import (
	"fmt"

	"github.com/skillhost/skillhost/host/fault"
)

// Class says how scopes apply to a method (the scope table of the README).
type Class uint8

// The method classes.
const (
	// ClassOther needs a method: scope matching the method name.
	ClassOther Class = iota
	// ClassOwn is open to every principal: it acts only on the principal's
	// own sessions, context, plans or tasks (others' are not found).
	ClassOwn
	// ClassRun runs a skill: any skill: or agent: scope admits the method;
	// the skill (or agent) it runs must then be in scope.
	ClassRun
	// ClassPlan starts plan work: a method: scope matching the method, and
	// every step's skill (or agent) in scope.
	ClassPlan
)

// MetricsPseudoMethod is the name a method: scope grants GET /metrics with.
const MetricsPseudoMethod = "metrics"

// AdminPseudoMethod is the name a method: scope grants the admin endpoints
// (GET /admin/…) and the dashboard's data with.
const AdminPseudoMethod = "admin"

// methodClass is the scope table. A method not listed is ClassOther.
var methodClass = map[string]Class{
	"_cleveragents/session/create": ClassOwn,
	"_cleveragents/session/close":  ClassOwn,
	"_cleveragents/context/get":    ClassOwn,
	"_cleveragents/context/set":    ClassOwn,
	"_cleveragents/plan/status":    ClassOwn,
	"_cleveragents/plan/cancel":    ClassOwn,
	"_cleveragents/plan/list":      ClassOwn,
	"_cleveragents/plan/verify":    ClassOwn,
	"_cleveragents/task/verify":    ClassOwn,
	"_cleveragents/skill/execute":  ClassRun,
	"_cleveragents/agent/call":     ClassRun,
	"_cleveragents/agent/notify":   ClassRun,
	"_cleveragents/plan/create":    ClassPlan,
	"_cleveragents/plan/execute":   ClassPlan,

	"SendMessage": ClassRun, "SendStreamingMessage": ClassRun, "message/send": ClassRun, "message/stream": ClassRun,
	"GetTask": ClassOwn, "ListTasks": ClassOwn, "CancelTask": ClassOwn, "SubscribeToTask": ClassOwn,
	"tasks/get": ClassOwn, "tasks/list": ClassOwn, "tasks/cancel": ClassOwn, "tasks/resubscribe": ClassOwn,
	"GetExtendedAgentCard": ClassOwn, "agent/getAuthenticatedExtendedCard": ClassOwn,
	"CreateTaskPushNotificationConfig": ClassOwn, "GetTaskPushNotificationConfig": ClassOwn,
	"ListTaskPushNotificationConfigs": ClassOwn, "DeleteTaskPushNotificationConfig": ClassOwn,
	"tasks/pushNotificationConfig/set": ClassOwn, "tasks/pushNotificationConfig/get": ClassOwn,
	"tasks/pushNotificationConfig/list": ClassOwn, "tasks/pushNotificationConfig/delete": ClassOwn,
	MCPPseudoMethod: ClassOwn,
}

// ClassOf returns the class of method.
func ClassOf(method string) Class { return methodClass[method] }

// startsTask lists the methods whose work runs as an A2A task: the task
// holds its own running slot (Guard.Occupy) for as long as it runs, so the
// call itself does not take a second one.
var startsTask = map[string]bool{"SendMessage": true, "SendStreamingMessage": true, "message/send": true, "message/stream": true}

// StartsTask reports whether method's work runs as an A2A task.
func StartsTask(method string) bool { return startsTask[method] }

// MCPPseudoMethod is the name the MCP endpoint (/mcp) is authorized with:
// open to every key (each tool call checks its skill again), refused to
// session tokens.
const MCPPseudoMethod = "mcp"

// tokenMethods are the only methods a session token may call: each acts
// within the one session its params name (session_id) and nothing else, so
// a token bound to that session reaches exactly that session, its context
// and its plans. Every other method (session/create, the A2A methods and
// task/verify, whose tasks belong to the key and not to a session, MCP,
// /metrics, /admin, and any method added later) needs an API key: a method
// is refused to tokens unless it is listed here.
var tokenMethods = map[string]bool{
	"_cleveragents/session/close": true,
	"_cleveragents/context/get":   true,
	"_cleveragents/context/set":   true,
	"_cleveragents/skill/execute": true,
	"_cleveragents/agent/call":    true,
	"_cleveragents/agent/notify":  true,
	"_cleveragents/plan/create":   true,
	"_cleveragents/plan/execute":  true,
	"_cleveragents/plan/status":   true,
	"_cleveragents/plan/cancel":   true,
	"_cleveragents/plan/list":     true,
	"_cleveragents/plan/verify":   true,
}

// TokenMethod reports whether a session token may call method (with its
// own session_id).
func TokenMethod(method string) bool { return tokenMethods[method] }

// AllowMethod reports (nil) whether p may call method, whose params name
// sessionID (the envelope's session_id, "" when absent). It is the first of
// two gates: methods of ClassRun and ClassPlan check the skills they run
// again (AllowSkill). A session token may call only the methods of
// tokenMethods, naming its own session; the handlers look sessions up with
// OwnsSession, so they refuse any other session from the principal too.
func (p Principal) AllowMethod(method, sessionID string) error {
	if err := p.present(); err != nil {
		return err
	}
	if p.kind == KindToken {
		if !tokenMethods[method] {
			return fault.Newf(fault.Forbidden, fault.ReasonScopeDenied,
				"a session token may call only the methods of its own session (session/close, context/*, skill/execute, agent/*, plan/*); %s needs an API key", clip(method)).
				With("key_id", p.KeyID())
		}
		if sessionID != p.session {
			return fault.Newf(fault.Forbidden, fault.ReasonScopeDenied,
				"a session token is valid only for its own session: %s must name session_id %q", clip(method), clip(p.session)).
				With("key_id", p.KeyID())
		}
	}
	if p.all() || p.grants(ScopeMethod, method) {
		return nil
	}
	switch ClassOf(method) {
	case ClassOwn:
		return nil
	case ClassRun:
		if p.has(ScopeSkill) || p.has(ScopeAgent) {
			return nil
		}
		return p.deny(fmt.Sprintf("%s (it runs skills)", clip(method)), "skill:<glob>")
	}
	return p.deny(fmt.Sprintf("method %s", clip(method)), "method:"+clip(method))
}
