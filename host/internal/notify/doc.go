// Package notify delivers `_cleveragents/agent/notify` notifications: each
// is recorded on the event bus (so GET /events subscribers see it) under a
// dedupe id, and, when its target is a loaded plugin whose manifest declares
// `events: {function: …}`, handed to that export in the sandbox with the
// plugin's limits — at most once per notification id.
//
//	svc := notify.New(notify.Deps{Bus: bus, Agents: registry, Logger: log})
//	res, err := svc.Notify(ctx, notify.Notification{SessionID: s, Target: "billing", Event: "plan_completed", ID: requestID})
package notify
