// Package host is the skillhost server library: it wires the state store,
// the sandbox runtime, the plugin registry, the JSON-RPC engine with every
// method, the Agent Cards and the transports into one Host.
//
//	cfg, _ := config.Load(config.Sources{})
//	h, err := host.New(ctx, cfg, host.WithVersion("1.0.0"))
//	if err != nil { … }
//	defer h.Close(ctx)
//	err = h.Serve(ctx) // until ctx ends; then a graceful shutdown
//
// A Host is safe for concurrent use.
package host
