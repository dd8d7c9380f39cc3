// Package rpc implements the `_cleveragents/*` methods of spec 001 on top of
// the state store and the plugin registry, and registers them on a
// transport-agnostic *jsonrpc.Engine.
//
//	svc := rpc.New(rpc.Deps{Sessions: st, Skills: registry, Logger: log})
//	svc.Register(engine, nil)
//
// Sessions gate everything: every method but session/create needs an active
// session (unknown or closed → -32100). Handlers return *fault.Error values;
// they never choose numeric codes. A Service is safe for concurrent use.
package rpc
