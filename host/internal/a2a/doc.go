// Package a2a is skillhost's A2A task service: it models the nine A2A
// task states and their transitions (TaskState), persists tasks in NATS
// JetStream KV with revision-checked updates (TaskStore), runs a message's
// skill as a task (Service: blocking, streaming, multi-turn, leased to the
// host running it), fans task events out to every stream watching a task,
// and maps each contextId to a session (Contexts).
//
// Service's typed methods (SendMessage, GetTask, …, ctx first, a2a-go v1.0
// requests) are what every binding calls. Register puts them on a
// *jsonrpc.Engine under their v1.0 names and, decoded and encoded by
// package v03, under their v0.3 names (message/send, …); the method name
// decides the wire shape. The other jobs live beside it:
//
//   - agentcard: the Agent Cards (building, canonical form, signing, the
//     card service, interface selection).
//   - push: push configs and their delivery (through host/internal/delivery).
//   - rest: the HTTP+JSON binding, a switch from routes to v1.0 methods.
//   - grpcbind: the gRPC binding (a2a-go's a2asrv.RequestHandler).
//   - v03: every v0.3 shape, in and out.
//
// Skill routing: the skill is message.metadata.skillId (or the request's
// metadata.skillId); when absent and exactly one skill is in scope, that
// one; otherwise -32602 listing the skills. The scope is the whole host, or
// one plugin when the request carries that plugin's name as its tenant (the
// per-agent cards advertise it on their interfaces) or comes through that
// plugin's endpoint (jsonrpc.TransportInfo.Agent).
package a2a
