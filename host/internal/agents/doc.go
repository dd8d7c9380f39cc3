// Package agents routes agent calls — `_cleveragents/agent/call`, the
// agent_call host function, plan steps of type "agent" — to a plugin of this
// host or to a remote peer (host/internal/remote), with the peer's fallback
// agents, under one depth limit carried across hosts.
//
//	r := agents.New(registry, peers, agents.Config{MaxDepth: cfg.Agents.MaxCallDepth, Guard: guard})
//	res, err := r.Call(auth.Invoke(ctx, auth.Invocation{SessionID: sid}), agents.Call{Target: "billing", Method: "charge", Input: in})
//
// Depth: every call a plugin makes (agent_call) and every call forwarded to
// a peer is one hop. A call's depth is what the router attached to its
// context, else the request's X-Skillhost-Call-Depth header (a peer host
// sends it), else 0; one hop past Config.MaxDepth fails with -32106
// call_depth, so a cycle between hosts ends.
//
// Authorization: the principal of the context (the original caller) must be
// granted each agent actually called — an agent: scope for a remote agent,
// the registry's skill check for a plugin; a fallback it may not use is
// skipped. A nested call also takes one of the principal's rate tokens.
//
// A Router is safe for concurrent use.
package agents
