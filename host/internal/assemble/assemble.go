// Package assemble is the composition root: the one place a host is built.
// Its parts are an ordered list of components (components.go), each
// provisioned from its own section of one validated config.Config and the
// parts before it, and closed in reverse — on a failed build as on
// shutdown. Every command builds the subset its Purpose names from the same
// list, so `serve` (host.New), `card` (host.Card), `plugin test` and
// `plugin validate` (host/devkit) and `plugin publish` (host.PublishPlugin)
// load plugins, sign cards and open the store the same way; nothing is
// wired twice.
//
//	root, err := assemble.Build(ctx, assemble.Spec{Config: cfg, Purpose: assemble.Validate})
//	if err != nil { … }
//	defer root.Close(ctx)
//	_, err = root.Registry.Load(ctx, oneFolder)
//
// A Root is safe for concurrent use once built; Close once.
package assemble

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/a2a/rest"
	"github.com/skillhost/skillhost/host/internal/admin"
	"github.com/skillhost/skillhost/host/internal/agents"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/delivery"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/mcp"
	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/oci"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/remote"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// Spec says what to build: the configuration, the purpose (which
// components), and what the configuration file does not carry.
type Spec struct {
	// Config is the whole configuration; Build validates it.
	Config config.Config
	// Purpose selects the components. Required.
	Purpose Purpose
	// Version is reported by /health and the Agent Card. Optional.
	// Default: "dev".
	Version string
	// Logger receives plugin logs and host diagnostics. Optional. Default:
	// discard.
	Logger *slog.Logger
	// LoadLogger receives the registry's load, reload and problem messages.
	// Optional. Default: Logger.
	LoadLogger *slog.Logger
	// CacheDir is wazero's compilation cache. Optional. Default: Serve:
	// <data>/wazero-cache; otherwise "" (in memory).
	CacheDir string
	// Stdin and Stdout carry the stdio transports (Serve with stdio or
	// mcp_stdio). Optional. Default: none (io.EOF, io.Discard).
	Stdin  io.Reader
	Stdout io.Writer
	// Plugins, when set, is the plugin folder instead of cfg.Plugins: its
	// files are copied under <data>/plugins-fs at start and loaded like a
	// folder (never watched). Optional.
	Plugins fs.FS
	// NATS, when set, is the state store's connection instead of cfg.NATS
	// or an embedded server; the caller keeps it open and closes it after
	// Close. Optional.
	NATS *nats.Conn
	// NoListener builds the HTTP transport without binding cfg.Listen: it is
	// served only through Handler, mounted in the caller's app listening on
	// cfg.Listen. Optional.
	NoListener bool
}

// Root is a built host: the parts its components made, in order. Fields
// are nil for components its Purpose left out.
type Root struct {
	cfg     config.Config
	spec    Spec
	purpose Purpose
	log     *slog.Logger
	version string

	// Store is the state store (nil: Card, Validate).
	Store *store.Store
	// Runtime runs every plugin's sandbox.
	Runtime *sandbox.Runtime
	// Net is the net.* policy plugins fetch under; push notifications and
	// plan webhooks are sent under it too.
	Net hostfn.NetPolicy
	// Peers are the remote agents (agents.remote).
	Peers *remote.Peers
	// Registry is the plugin registry, with the host functions under the
	// policy.
	Registry *plugin.Registry
	// Router routes agent calls to plugins and peers: agent/call, plan
	// steps (the agent_call host function has its own, over the same
	// registry and peers).
	Router *agents.Router
	// Settings are the operator's plugins.<name> settings each plugin's
	// config is merged from.
	Settings *Settings

	ln            net.Listener
	served        atomic.Bool // Serve took over the listener
	tlsCfg        *tls.Config // nil: plain HTTP
	keys          *auth.KeySet
	traces        *sdktrace.TracerProvider // nil: tracing off
	tracer        trace.Tracer             // nil: tracing off
	metrics       *metrics.Metrics
	remoteMetrics *metrics.Remote
	observer      *observer
	failures      *admin.Ring
	guard         *auth.Guard
	admin         *admin.Admin
	signer        *identity.Signer // nil without identity.key_file
	loadErr       error            // the plugin folder's load problems
	oci           *oci.Mirror      // nil without sources.oci
	authn         *auth.Authenticator
	engine        *jsonrpc.Engine
	events        *events.Bus
	delivery      *delivery.Service // push notifications and plan webhooks
	cards         *agentcard.Service
	tasks         *a2a.Service
	rest          *rest.Binding
	mcp           *mcp.Server
	http          *httpx.Server
	grpc          *grpcBinding // nil without grpc.listen (grpc.go)

	bg      context.Context // background work; each component's ends in its Close
	closers []closer        // in build order; Close runs them in reverse
	once    sync.Once
	tmp     string // a Test store's folder
}

// closer takes apart what one component built.
type closer struct {
	name  string
	close func(ctx context.Context) error
}

// Build validates spec.Config and provisions every component of
// spec.Purpose in order. On error it closes, in reverse, what it built.
func Build(ctx context.Context, spec Spec) (_ *Root, err error) {
	if spec.Purpose == 0 {
		return nil, errors.New("assemble: Spec.Purpose is required")
	}
	if err := spec.Config.Validate(); err != nil {
		return nil, err
	}
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.DiscardHandler)
	}
	if spec.Version == "" {
		spec.Version = "dev"
	}
	h := &Root{cfg: spec.Config, spec: spec, purpose: spec.Purpose, log: spec.Logger, version: spec.Version,
		bg: context.WithoutCancel(ctx)}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Close(context.WithoutCancel(ctx)))
		}
	}()
	for _, c := range components {
		if c.in&spec.Purpose == 0 {
			continue
		}
		if err := c.provision(h, ctx); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// onClose adds the closer of the component being provisioned.
func (h *Root) onClose(name string, f func(ctx context.Context) error) {
	h.closers = append(h.closers, closer{name: name, close: f})
}

// background runs f until Close reaches this point of the build (in
// reverse order): its context then ends and Close waits for it to return.
func (h *Root) background(name string, f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(h.bg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	h.onClose(name, func(context.Context) error {
		cancel()
		<-done
		return nil
	})
}

// Close takes every component apart in the reverse order of the build:
// background work stops before the parts it uses close, the plugins
// unload (waiting for calls in flight) before the runtime, the store
// closes last but for tracing (flushed) and the listener. It is
// idempotent.
func (h *Root) Close(ctx context.Context) error {
	var errs []error
	h.once.Do(func() {
		for i := len(h.closers) - 1; i >= 0; i-- {
			if err := h.closers[i].close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", h.closers[i].name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// Addr is the HTTP listener's address (nil without one).
func (h *Root) Addr() net.Addr {
	if h.ln == nil {
		return nil
	}
	return h.ln.Addr()
}

// ListenAddr is where HTTP is served: the listener's address, else (the
// caller's app serves the HTTP transport) cfg.Listen resolved.
func (h *Root) ListenAddr() net.Addr {
	if h.ln != nil {
		return h.ln.Addr()
	}
	addr, err := net.ResolveTCPAddr("tcp", h.cfg.Listen)
	if err != nil {
		return nil
	}
	return addr
}

// Engine is the JSON-RPC engine every transport dispatches to (Serve).
func (h *Root) Engine() *jsonrpc.Engine { return h.engine }

// HTTP is the HTTP transport (nil when listen is empty).
func (h *Root) HTTP() *httpx.Server { return h.http }
