package httpx

import (
	"context"
	"crypto/tls"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// Config configures the HTTP transport.
type Config struct {
	// HTTP is the http.* section: body_limit (larger bodies get -32600
	// body_too_large), read_timeout (no slowloris), write_timeout (streams
	// included; 0: none), idle_timeout, max_conns, max_conns_per_addr (one
	// client address's share, IPv6: one /64; past it 429 key_quota; 0: no
	// share), reserved_conns (connections past those caps that answer only
	// GET /health, the cards and the JWKS, then close; 0: none),
	// allowed_origins, allowed_hosts, pprof. Its tls files are the caller's
	// to load (TLS). Optional: the zero section is config.Defaults().HTTP.
	HTTP config.HTTP
	// Version is reported by /health. Optional. Default: "dev".
	Version string
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
	// Events serves GET /events (Server-Sent Events). Optional. Default:
	// none (the route is absent).
	Events EventSource
	// Admin serves GET /admin/<name> as JSON, one document per name, with
	// the access rules of /rpc and the pseudo-method scope "admin".
	// Optional. Default: none (the routes are absent).
	Admin AdminDocs
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
	Access AccessSink
	// AgentMethods are the methods POST /agents/{name}/rpc serves (the A2A
	// methods), restricted to that agent's skills. Optional. Default: none.
	AgentMethods func(method string) bool
	// REST serves the A2A HTTP+JSON binding under RESTPath (any HTTP
	// method, guarded as /rpc). Optional. Default: nil (no such routes).
	REST RESTHandler
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
	Ready Readiness
}

// The handlers the transport dispatches to besides the engine. They are
// declared here, where they are used, and implemented below the transport
// or by the composition root's adapters: the transport imports no method
// package and calls no function of a higher layer.

// RESTHandler serves one request of the A2A HTTP+JSON binding.
type RESTHandler interface {
	ServeREST(ctx context.Context, r RESTRequest) RESTReply
}

// RESTRequest is a request of the HTTP+JSON binding: Path is below
// Config.RESTPath.
type RESTRequest struct {
	Method, Path string
	Query        url.Values
	Body         []byte
}

// RESTReply is the binding's answer: Status and Body, or Stream (its events
// already encoded, sent as Server-Sent Events). Err is the error Body
// carries, for the 401/429 headers.
type RESTReply struct {
	Status int
	Body   []byte
	Stream jsonrpc.Stream
	Err    *fault.Error
}

// AdminDocs are the documents of GET /admin/<name>.
type AdminDocs interface {
	// AdminDoc returns the document name (ok false: there is none).
	AdminDoc(ctx context.Context, name string) (doc any, ok bool)
}

// AccessSink hears of every answered request (Config.Access).
type AccessSink interface {
	Answered(ctx context.Context, a Access)
}

// Readiness reports whether the host can serve state (Config.Ready).
type Readiness interface {
	Ready() error
}

func (c Config) withDefaults() Config {
	if reflect.ValueOf(c.HTTP).IsZero() {
		c.HTTP = config.Defaults().HTTP
	}
	if c.Version == "" {
		c.Version = "dev"
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
