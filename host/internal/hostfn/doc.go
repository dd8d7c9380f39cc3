// Package hostfn provides the host functions skillhost gives to plugins and
// the read-only filesystem mounts built from their path grants.
//
// Every host function lives in the Wasm import namespace "extism:host/user"
// and follows one ABI (docs/HOST_FUNCTIONS.md): the guest passes the offset of
// an Extism memory block holding a JSON request and gets back the offset of a
// block holding {"ok":true,"result":…} or {"ok":false,"error":{"code":…,
// "message":…}}. Every offset and length from the guest is checked; a bad one
// is answered with an error reply, never a host panic.
//
//	log          leveled host log, attributed and rate-limited per plugin
//	progress     progress report delivered to Call.Progress
//	context_get  read a key of the calling session's context
//	context_set  write a key of the calling session's context
//	http_fetch   HTTP GET/HEAD/POST to an allowed host, with SSRF guards
//	agent_call   call another agent (permissions.agents) through Deps.Agents
//	task_history the messages of the A2A task the call runs a turn of (Call.Task)
//	task_interrupt end the turn in input-required or auth-required with a question
//
// Per-call data travels in the context given to the sandbox call: the
// call's identity (session, request id, principal) in its auth.Invocation,
// what only host functions need (plugin, skill, progress sink, task) in a
// Call:
//
//	ctx = auth.Invoke(ctx, auth.Invocation{SessionID: sid, RequestID: rid})
//	ctx = hostfn.WithCall(ctx, &hostfn.Call{Plugin: "text-tools", Skill: "uppercase"})
//	res, err := module.Call(ctx, "uppercase", input)
//
// Extism passes that context (derived) to each host function callback.
//
// The functions New returns are safe for concurrent use by many instances of
// the same plugin; the rate limits they hold are shared by all of them.
package hostfn
