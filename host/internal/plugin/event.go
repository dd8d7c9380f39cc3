package plugin

import (
	"context"
	"encoding/json"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// EventCall is one notification for a plugin's events export.
type EventCall struct {
	// Agent is the plugin name (the notification's target_agent_id).
	Agent string
	// Input is the event as JSON.
	Input json.RawMessage
}

// DeliverEvent runs the target plugin's events export (manifest `events:`)
// with the event as input, in the sandbox with the plugin's limits. As for
// Execute, the caller attaches what host functions need (hostfn.WithCall)
// to ctx, and the invocation on ctx attributes its errors. It reports false, and no error, when the plugin declares no
// events export; an unknown plugin is AgentNotFound (unknown_agent). The
// export's output is ignored; its failures are *fault.Error values as for
// Execute.
func (r *Registry) DeliverEvent(ctx context.Context, call EventCall) (bool, error) {
	e, err := r.acquireAgent(call.Agent)
	if err != nil || e == nil {
		return false, err
	}
	defer e.release(ctx)
	p := e.plugin
	if _, err := e.module.Call(ctx, p.Manifest.Events.Function, call.Input); err != nil {
		fe := fault.From(err).With("plugin", p.Manifest.Name).With("function", p.Manifest.Events.Function)
		inv := auth.InvocationFrom(ctx)
		if inv.SessionID != "" {
			fe = fe.With("session_id", inv.SessionID)
		}
		if inv.RequestID != "" {
			fe = fe.With("request_id", inv.RequestID)
		}
		return true, fe
	}
	return true, nil
}

// acquireAgent pins the entry of plugin name when it has an events export
// (nil when it has none).
func (r *Registry) acquireAgent(name string) (*entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, fault.New(fault.Internal, fault.ReasonInternal, "the plugin registry is closed")
	}
	e, ok := r.cur.byName[name]
	if !ok {
		names := make([]string, 0, len(r.cur.snap.Plugins))
		for _, p := range r.cur.snap.Plugins {
			names = append(names, p.Manifest.Name)
		}
		return nil, unknown(fault.AgentNotFound, fault.ReasonUnknownAgent, "agent", name, names)
	}
	if e.plugin.Manifest.Events == nil {
		return nil, nil
	}
	e.refs.Add(1)
	return e, nil
}
