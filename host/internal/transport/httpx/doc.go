// Package httpx is the HTTP transport: a Fiber v2 app that adapts HTTP to the
// transport-agnostic JSON-RPC engine. It owns no protocol logic.
//
// Routes: POST /rpc (JSON-RPC; SSE for streaming results), POST /events
// (notifications only), GET /events (the event stream as SSE, from an
// EventSource), GET /health, GET /.well-known/agent-card.json and
// per-agent cards (from a CardSource), GET /metrics (Prometheus). Every
// answered request, including those refused before routing, is reported to
// Config.Access (route as registered, status, the refusal sent).
//
//	srv := httpx.New(httpx.Config{Version: "1.2.0"}, engine, cards, metricsHandler)
//	ln, _ := net.Listen("tcp", "127.0.0.1:8080")
//	go srv.Serve(ln)
//	defer srv.Shutdown(ctx)
//
// Connections are counted as they are accepted (conns.go): at most MaxConns
// on the host and MaxConnsPerAddr per client address; past either, a small
// reserve (ReservedConns) answers only /health, the cards and the JWKS, one
// request per connection, so a full host still reports its health.
//
// A Server is safe for concurrent use. Shutdown stops accepting connections
// and waits for in-flight requests (including streams) up to its context.
package httpx
