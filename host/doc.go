// Package host is the skillhost server library: New builds, through the
// composition root (host/internal/assemble), the state store, the sandbox
// runtime, the plugin registry, the JSON-RPC engine with every method, the
// Agent Cards and the transports into one Host.
//
//	cfg, _ := config.Load(config.Sources{})
//	h, err := host.New(ctx, cfg, host.WithVersion("1.0.0")) // WithPlugins(fsys), WithNATS(nc), WithoutListener(), …
//	if err != nil { … }
//	defer h.Close(ctx)
//	err = h.Serve(ctx) // until ctx ends; then a graceful shutdown
//
// Built WithoutListener, the host's HTTP routes are served inside the
// caller's Fiber app: app.Use(h.Handler()) after the app's own routes.
//
// A Host is safe for concurrent use.
package host
