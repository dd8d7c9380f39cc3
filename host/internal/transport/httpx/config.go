package httpx

import (
	"context"
	"crypto/tls"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// Config configures the HTTP transport. Zero fields take the defaults.
type Config struct {
	// Version is reported by /health. Optional. Default: "dev".
	Version string
	// BodyLimit caps request bodies; larger ones get -32600 body_too_large.
	// Optional. Default: 1 MiB.
	BodyLimit int
	// ReadTimeout bounds reading a whole request (no slowloris).
	// Optional. Default: 10s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response (streams included). Optional.
	// Default: 0, none (the host passes http.write_timeout, 5m unless set).
	WriteTimeout time.Duration
	// IdleTimeout closes idle keep-alive connections. Optional. Default: 60s.
	IdleTimeout time.Duration
	// MaxConns caps concurrent connections. Optional. Default: 1024.
	MaxConns int
	// MaxConnsPerAddr caps those of one client address (IPv6: one /64):
	// past it a connection is answered 429 (key_quota). Optional.
	// Default: DefaultMaxConnsPerAddr, at most MaxConns; -1: no
	// per-address share.
	MaxConnsPerAddr int
	// ReservedConns are connections past MaxConns or an address's share
	// that answer only GET /health, the cards and the JWKS, then close.
	// Optional. Default: DefaultReservedConns; -1: none.
	ReservedConns int
	// KeepAlive is the interval of SSE keep-alive comments. Optional. Default: 15s.
	KeepAlive time.Duration
	// Auth authenticates API keys and session tokens on the protected routes
	// (/rpc, /events, /metrics). Optional. Default: nil, or one without
	// keys: only loopback clients are served, as the local principal
	// "loopback", and their Host header must name this host.
	Auth *auth.Authenticator
	// TLS, when set, serves HTTPS with it. Optional. Default: plain HTTP.
	TLS *tls.Config
	// PublicURL is the base URL clients use; its origin and host are
	// accepted. Optional.
	PublicURL string
	// AllowedOrigins are extra browser origins accepted (normalized,
	// lower-case "scheme://host[:port]"). Optional. Default: none.
	AllowedOrigins []string
	// AllowedHosts are extra Host header values accepted in loopback-only
	// mode ("name" matches any port). Optional. Default: none.
	AllowedHosts []string
	// Pprof serves the Go profiler under /debug/pprof/ (all but cmdline),
	// with the access rules of /metrics. Optional. Default: false.
	Pprof bool
	// Events serves GET /events (Server-Sent Events). Optional. Default:
	// none (the route is absent).
	Events EventSource
	// Admin serves GET /admin/<name> as JSON, one document per name, with
	// the access rules of /rpc and the pseudo-method scope "admin".
	// Optional. Default: none (the routes are absent).
	Admin map[string]func(ctx context.Context) any
	// UI serves the dashboard's static files under /ui/ (index.html at
	// /ui/). Loopback-only hosts serve it to loopback clients; with API
	// keys the page is public (it holds no data) and asks for a key, which
	// it sends as a header to /admin/… and /events. Optional. Default:
	// none.
	UI fs.FS
	// JWKS is the host's public signing keys (a JWKS document), served at
	// /.well-known/jwks.json (public, like the cards). Optional. Default:
	// none (the route answers 404).
	JWKS []byte
	// Access hears of every request once it is answered (access logs,
	// metrics), those the server refused before routing them too; it runs
	// on the request's goroutine. Optional. Default: none.
	Access func(ctx context.Context, a Access)
	// AgentMethods are the methods POST /agents/{name}/rpc serves (the A2A
	// methods), restricted to that agent's skills. Optional. Default: none.
	AgentMethods func(method string) bool
	// REST serves the A2A HTTP+JSON binding under RESTPath (any HTTP
	// method, guarded as /rpc): path is below RESTPath; the reply is status
	// and body, or stream (its events already encoded, sent as Server-Sent
	// Events); fe is the error body carries, for 401/429 headers. Optional.
	// Default: nil (no such routes).
	REST func(ctx context.Context, method, path string, query url.Values, body []byte) (status int, resp []byte, stream jsonrpc.Stream, fe *fault.Error)
	// MCP serves the Model Context Protocol's Streamable HTTP transport at
	// /mcp (POST, GET for its event stream, DELETE), guarded as /rpc; the
	// handler's context carries the principal. Optional. Default: nil (no
	// such route).
	MCP http.Handler
	// RESTPath is the path prefix of REST. Optional. Default: "/a2a".
	RESTPath string
	// Logger receives request errors. Optional. Default: slog.Default().
	Logger *slog.Logger
	// Ready reports whether the host can serve state (its NATS connection
	// is up); while it returns an error /health answers 503 with status
	// "unhealthy", so a load balancer routes around the host. Optional.
	// Default: always ready.
	Ready func() error
}

func (c Config) withDefaults() Config {
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.BodyLimit <= 0 {
		c.BodyLimit = 1 << 20
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 10 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 60 * time.Second
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 1024
	}
	if c.ReservedConns == 0 {
		c.ReservedConns = DefaultReservedConns
	}
	if c.RESTPath == "" {
		c.RESTPath = "/a2a"
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
