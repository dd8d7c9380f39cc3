// Package a2a serves skillhost's skills over the official A2A protocol.
//
// It generates the Agent Card from the plugin registry's snapshot (the union
// of the v1.0 and v0.3 card shapes, so clients of both versions read it),
// selects interfaces from a card (SelectInterface), models the nine A2A task
// states and their transitions (TaskState), persists tasks in NATS JetStream
// KV with revision-checked updates (TaskStore), fans task events out to
// every stream watching a task (broker), and registers the A2A JSON-RPC
// methods — v1.0 names (SendMessage, …) and v0.3 names (message/send, …) —
// on a *jsonrpc.Engine (Register). The method name decides the wire shape.
//
// The same methods are served over A2A's HTTP+JSON binding (REST, through
// the engine's Invoke), push notifications are stored and delivered by Push,
// and Contexts maps each contextId to a session.
//
// Skill routing: the skill is message.metadata.skillId (or the request's
// metadata.skillId); when absent and exactly one skill is in scope, that
// one; otherwise -32602 listing the skills. The scope is the whole host, or
// one plugin when the request carries that plugin's name as its tenant (the
// per-agent cards advertise it on their interfaces) or comes through that
// plugin's endpoint (jsonrpc.TransportInfo.Agent).
package a2a
