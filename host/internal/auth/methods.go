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
}

// ClassOf returns the class of method.
func ClassOf(method string) Class { return methodClass[method] }

// startsTask lists the methods whose work runs as an A2A task: the task
// holds its own running slot (Guard.Occupy) for as long as it runs, so the
// call itself does not take a second one.
var startsTask = map[string]bool{"SendMessage": true, "SendStreamingMessage": true, "message/send": true, "message/stream": true}

// StartsTask reports whether method's work runs as an A2A task.
func StartsTask(method string) bool { return startsTask[method] }

// sessionCreate is the one method a session token may not call.
const sessionCreate = "_cleveragents/session/create"

// AllowMethod reports (nil) whether p may call method, whose params name
// sessionID (the envelope's session_id, "" when absent). It is the first of
// two gates: methods of ClassRun and ClassPlan check the skills they run
// again (AllowSkill). A session token may call only methods naming its
// session.
func (p Principal) AllowMethod(method, sessionID string) error {
	if err := p.present(); err != nil {
		return err
	}
	if p.kind == KindToken && (method == sessionCreate || sessionID != p.session) {
		return fault.Newf(fault.Forbidden, fault.ReasonScopeDenied,
			"a session token is valid only for methods naming its own session_id; %s needs an API key", clip(method)).
			With("key_id", p.KeyID())
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
