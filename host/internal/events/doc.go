// Package events is the host's event bus: plan progress and agent
// notifications, kept in the JetStream stream SKILLHOST_EVENTS so that a
// subscriber can resume after a disconnect, a restart or a move to another
// host of the cluster.
//
// Every event is stored under the subject
// skillhost.events.<session>.<plan>.<type> (session and plan base64url
// encoded, "_" when absent), so a subscription filters on the server. The
// stream sequence is the event's id; a subscriber resumes after the last id
// it saw. An event may carry a dedupe id: a second publish with the same id
// within the dedupe window is dropped (Publish reports it), which is what
// makes notification delivery at most once.
//
// Wire format of one event (GET /events, Server-Sent Events):
//
//	id: 42
//	event: plan.step.completed
//	data: {"id":"42","type":"plan.step.completed","time":"2025-01-02T03:04:05.678Z","session_id":"sess_1","plan_id":"p1","data":{…}}
//
// Usage:
//
//	bus, err := events.Open(ctx, st, cfg.Events) // the events.* section
//	dup, err := bus.Publish(ctx, events.Event{Type: events.PlanStarted, SessionID: s, PlanID: p, Data: raw})
//	sub, err := bus.Subscribe(ctx, events.Filter{SessionID: s, After: 41})
//	defer sub.Close()
//	ev, err := sub.Next(ctx)
package events
