package host

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"

	"github.com/gofiber/fiber/v2"
	"github.com/nats-io/nats.go"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/assemble"
)

// Host is a running skillhost. Create it with New; Serve it; Close it.
type Host struct {
	root *assemble.Root // every component, built in order (host/internal/assemble)
}

// New validates cfg and builds the host: it binds the HTTP listener when
// cfg.Listen is set (first, so a port in use fails at once and Addr is known
// before Serve), opens the state store, starts the sandbox runtime, loads
// the plugin folder (a broken plugin is logged and skipped, never fatal)
// and registers every method. On error it closes what it built.
func New(ctx context.Context, cfg config.Config, opts ...Option) (*Host, error) {
	o := options{assemble.Spec{Config: cfg, Purpose: assemble.Serve, Logger: slog.Default(), Stdin: os.Stdin, Stdout: os.Stdout}}
	for _, opt := range opts {
		opt(&o)
	}
	root, err := assemble.Build(ctx, o.spec)
	if err != nil {
		return nil, err
	}
	return &Host{root: root}, nil
}

// Serve runs the configured transports until ctx ends (or, with stdio only,
// until standard input ends), then shuts down gracefully: no new requests,
// in-flight calls finish within http.shutdown_timeout, and the host closes.
func (h *Host) Serve(ctx context.Context) error { return h.root.Serve(ctx) }

// Addr is the HTTP listener's address (nil when HTTP is off, or served
// only through Handler).
func (h *Host) Addr() net.Addr { return h.root.Addr() }

// Handler serves the host's HTTP routes inside your own Fiber app, for a
// host built WithoutListener: register it after the app's own routes with
// app.Use(h.Handler()), and serve the app on cfg.Listen (the address the
// cards publish and the Host check accepts). Every request the app's routes
// do not answer goes to the host — /rpc, /a2a/…, /mcp, /events, the Agent
// Cards, /health, /metrics, /admin/…, 404 for the rest — with the host's own
// credentials, limits, middleware and error bodies; the app's routes and
// error handler are left alone. The app's server reads the requests, so its
// timeouts and connection limits are the ones that apply (http.max_conns,
// http.max_conns_per_addr, http.reserved_conns and the http timeouts are a
// listener's); http.body_limit is checked again. Nil when cfg.Listen is
// empty.
func (h *Host) Handler() fiber.Handler {
	if h.root.HTTP() == nil {
		return nil
	}
	return h.root.HTTP().Handler(h.root.ListenAddr())
}

// Close stops background work and closes every component in the reverse
// order of New: plugins, the sandbox, the store. It is idempotent; Serve
// already calls it.
func (h *Host) Close(ctx context.Context) error { return h.root.Close(ctx) }

// An Option configures what the configuration file does not carry.
type Option func(*options)

// options are what the Options set: the root's Spec.
type options struct{ spec assemble.Spec }

// WithVersion is the version reported by /health and the Agent Card.
// Default: "dev".
func WithVersion(v string) Option { return func(o *options) { o.spec.Version = v } }

// WithLogger receives the host's logs. Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.spec.Logger = l } }

// WithStdio are the stdio transport's input and output (stdio, mcp_stdio).
// Default: os.Stdin and os.Stdout.
func WithStdio(in io.Reader, out io.Writer) Option {
	return func(o *options) { o.spec.Stdin, o.spec.Stdout = in, out }
}

// WithPlugins serves the plugin folders of fsys (an embed.FS, say: one
// sub-folder per plugin, each with plugin.yaml and its module) instead of
// cfg.Plugins. They are copied under <data>/plugins-fs at start, each file
// at most policy.max_module_bytes, and loaded like a folder, under the same
// policy and trust; they are not watched.
func WithPlugins(fsys fs.FS) Option { return func(o *options) { o.spec.Plugins = fsys } }

// WithNATS uses nc, an existing connection to a NATS server with
// JetStream, for the state store instead of cfg.NATS or an embedded
// server. The host never closes it: close it after Close.
func WithNATS(nc *nats.Conn) Option { return func(o *options) { o.spec.NATS = nc } }

// WithoutListener builds the HTTP transport without binding cfg.Listen:
// HTTP is served only through Handler, mounted in the caller's Fiber app
// listening on cfg.Listen.
func WithoutListener() Option { return func(o *options) { o.spec.NoListener = true } }

// MCPStdioPrincipal is the trusted local principal of MCP on stdio.
const MCPStdioPrincipal = assemble.MCPStdioPrincipal
