package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/admin"
	"github.com/skillhost/skillhost/host/internal/assemble"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/dashboard"
	"github.com/skillhost/skillhost/host/internal/delivery"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/mcp"
	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/notify"
	"github.com/skillhost/skillhost/host/internal/oci"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/rpc"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// Options are what the configuration file does not carry.
type Options struct {
	Version string       // reported by /health and the Agent Card. Default: "dev".
	Logger  *slog.Logger // Default: slog.Default().
	Stdin   io.Reader    // stdio transport input. Default: os.Stdin.
	Stdout  io.Writer    // stdio transport output. Default: os.Stdout.
}

// Host is a running skillhost. Create it with New; Serve it; Close it.
type Host struct {
	cfg      config.Config
	opts     Options
	log      *slog.Logger
	parts    *assemble.Parts // store, runtime and registry
	store    *store.Store
	runtime  *sandbox.Runtime
	registry *plugin.Registry
	engine   *jsonrpc.Engine
	metrics  *metrics.Metrics
	observer *observer
	failures *admin.Ring
	admin    *admin.Admin
	traces   *sdktrace.TracerProvider // nil: tracing off
	tracer   trace.Tracer             // nil: tracing off
	events   *events.Bus
	cards    *a2a.CardService
	signer   *identity.Signer // nil without identity.key_file
	tasks    *a2a.Service
	delivery *delivery.Service // push notifications and plan webhooks
	rest     *a2a.REST
	mcp      *mcp.Server
	authn    *auth.Authenticator
	guard    *auth.Guard
	http     *httpx.Server
	ln       net.Listener
	grpc     *grpcBinding // nil without grpc.listen (grpc.go)
	oci      *oci.Mirror  // nil without sources.oci

	served atomic.Bool // Serve took over the listener

	bg     context.Context // background work (hot reload), ended by Close
	stopBg context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// New binds the HTTP listener when cfg.Listen is set (first, so a port in
// use fails at once and Addr is known before Serve), opens the state store,
// starts the sandbox runtime, loads the plugin folder (a broken plugin is
// logged and skipped, never fatal) and registers every method.
func New(ctx context.Context, cfg config.Config, opts Options) (_ *Host, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	h := &Host{cfg: cfg, opts: opts, log: opts.Logger, metrics: metrics.New(), failures: admin.NewRing(admin.DefaultRingSize)}
	h.observer = &observer{metrics: h.metrics, failures: h.failures}
	h.bg, h.stopBg = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			_ = h.Close(ctx)
		}
	}()
	keys, err := cfg.Auth.KeySet()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := loadTLS(cfg.HTTP)
	if err != nil {
		return nil, err
	}
	// Bind first: a port in use fails the start at once, not after every
	// plugin has compiled.
	if cfg.Listen != "" {
		if h.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("listen %s: %w (another process serves this port: stop it, or choose another with --listen; with make: make run LISTEN=127.0.0.1:8081)", cfg.Listen, err)
			}
			return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
		}
		h.warnWildcard()
	}
	if err := h.listenGRPC(); err != nil {
		return nil, err
	}
	if h.traces, err = newTracing(ctx, cfg.Tracing, opts.Version); err != nil {
		return nil, err
	}
	if h.traces != nil {
		h.tracer = h.traces.Tracer("github.com/skillhost/skillhost/host")
		h.log.Info("tracing: spans are exported over OTLP/HTTP", "endpoint", cfg.Tracing.OTLPEndpoint, "sample_ratio", cfg.Tracing.SampleRatio)
	}
	h.guard = auth.NewGuard(nil, auth.MaxRunning(cfg.RPC.MaxRunningCalls))
	remoteMetrics := metrics.NewRemote(h.metrics.Registry())
	if h.parts, err = assemble.New(ctx, assemble.Spec{
		Config: cfg, Store: assemble.DataStore, CacheDir: filepath.Join(cfg.Data, "wazero-cache"), Logger: h.log,
		Observer: h.observer, Tracer: h.tracer, Guard: h.guard, RemoteObserver: remoteMetrics,
	}); err != nil {
		return nil, err
	}
	remoteMetrics.WatchBreakers(h.parts.Peers.Breakers)
	h.store, h.runtime, h.registry = h.parts.Store, h.parts.Runtime, h.parts.Registry
	h.registry.OnChange(h.observer.plugins)
	h.admin = admin.New(admin.Deps{Registry: h.registry, Runtime: h.runtime, Metrics: h.metrics, Failures: h.failures,
		Version: opts.Version, PublishedDir: filepath.Join(cfg.Data, publishedDir), Ready: h.store.Ready,
		OCIDir: filepath.Join(cfg.Data, ociDir), Sources: h.ociStates, Settings: h.parts.Settings.View})
	h.metrics.Watch(h.admin.Metrics())
	signingKeys, err := assemble.Keys(cfg.Identity, h.log)
	if err != nil {
		return nil, err
	}
	h.log.Info("sandbox memory budget (sandbox.max_live_bytes)", "bytes", h.runtime.Stats().BudgetBytes)
	if err := h.loadPlugins(ctx); err != nil {
		return nil, err
	}
	if err := h.setupPublished(ctx); err != nil { // after the local folder: a local plugin wins a name
		return nil, err
	}
	if err := h.setupOCI(ctx); err != nil {
		return nil, err
	}
	h.authn = auth.NewAuthenticator(keys, tokenStore{h.store})
	authz := authorize(h.log, h.guard)
	h.engine = jsonrpc.NewEngine(
		jsonrpc.WithMaxBodyBytes(int(cfg.RPC.MaxBody)),
		jsonrpc.WithMaxBatch(cfg.RPC.MaxBatch),
		jsonrpc.WithBatchConcurrency(cfg.RPC.BatchConcurrency),
		jsonrpc.WithMaxBatchResponseBytes(int(cfg.RPC.MaxBatchResponse)),
		jsonrpc.WithResponseBudget(int64(cfg.RPC.ResponseBudget)),
		jsonrpc.WithLogger(h.log),
		jsonrpc.WithRejected(h.rejected),
		// every method, whoever registers it: metrics and access lines count
		// what authorization refuses
		jsonrpc.WithMiddleware(func(method string, next jsonrpc.Handler) jsonrpc.Handler {
			return h.access(method, authz(method, next))
		}),
	)
	if err := h.setupEvents(ctx); err != nil {
		return nil, err
	}
	notifier := notify.New(notify.Deps{Bus: h.events, Agents: h.registry, Logger: h.log})
	rpc.New(rpc.Deps{Sessions: timedSessions{h.store, newStoreTimers(h.metrics)}, Skills: h.registry, Agents: h.parts.Router, Guard: h.guard,
		MaxSessionBytes: int64(cfg.Store.MaxSessionBytes), Notifier: notifier, Logger: h.log}).Register(h.engine, nil)
	if err := h.setupIdentity(signingKeys); err != nil {
		return nil, err
	}
	h.setupDelivery()
	if err := h.setupA2A(ctx); err != nil {
		return nil, err
	}
	if err := h.setupPlans(ctx); err != nil {
		return nil, err
	}
	if h.ln != nil {
		origins := make([]string, 0, len(cfg.HTTP.AllowedOrigins))
		for _, o := range cfg.HTTP.AllowedOrigins {
			n, _ := config.NormalizeOrigin(o) // validated with the config
			origins = append(origins, n)
		}
		h.http = httpx.New(httpx.Config{
			Version: opts.Version, BodyLimit: int(cfg.HTTP.BodyLimit), ReadTimeout: cfg.HTTP.ReadTimeout,
			WriteTimeout: cfg.HTTP.WriteTimeout, IdleTimeout: cfg.HTTP.IdleTimeout, MaxConns: cfg.HTTP.MaxConns,
			MaxConnsPerAddr: shareOrNone(cfg.HTTP.MaxConnsPerAddr), ReservedConns: shareOrNone(cfg.HTTP.ReservedConns),
			Auth: h.authn, TLS: tlsCfg, PublicURL: h.publicURL(), AllowedOrigins: origins, AllowedHosts: cfg.HTTP.AllowedHosts,
			Pprof: cfg.HTTP.Pprof, Events: h.eventSource(), Logger: h.log, Ready: h.ready,
			Admin: h.adminDocs(), UI: dashboard.Assets, JWKS: h.jwks(), Access: h.httpAccess, AgentMethods: a2a.IsMethod,
			RESTPath: a2a.RESTPath, REST: h.serveREST, MCP: h.mcp.Handler(),
		}, h.engine, h.cards, h.metrics.Handler())
	}
	h.setupGRPC(tlsCfg)
	h.metrics.WatchShares(h.shareMetrics)
	return h, nil
}

// loadPlugins loads the plugin folder and starts hot reload. Problems with
// single plugins are logged and visible in the registry snapshot.
func (h *Host) loadPlugins(ctx context.Context) error {
	dir := h.cfg.Plugins
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		h.log.Warn("plugin folder missing; serving no skills until it appears", "plugins", dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("plugin folder %s: %w", dir, err)
		}
	}
	h.log.Info("loading plugins (the first start compiles them, in the background; later starts use the cache)", "dir", dir)
	if err := h.registry.LoadDir(ctx, dir); err != nil {
		h.log.Error("some plugins failed to load; the others are served", "err", err)
	}
	if h.ln == nil {
		// One local client on stdio would find its plugins compiling: it
		// gets them compiled (a host on HTTP serves at once meanwhile).
		h.log.Info("serving stdio only: compiling the plugins before reading input")
		if err := h.registry.WaitCompiled(ctx); err != nil {
			return err
		}
	}
	snap := h.registry.Snapshot()
	h.log.Info("plugins loaded", "plugins", len(snap.Plugins), "problems", len(snap.Problems), "dir", dir)
	if h.cfg.HotReload {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			if err := h.registry.Watch(h.bg, dir); err != nil && !errors.Is(err, context.Canceled) {
				h.log.Error("hot reload stopped", "err", err)
			}
		}()
	}
	return nil
}

// adminDocs are the documents of GET /admin/<name>.
func (h *Host) adminDocs() map[string]func(context.Context) any {
	return map[string]func(context.Context) any{
		"status":   func(context.Context) any { return h.admin.Status() },
		"plugins":  func(context.Context) any { return h.admin.Plugins() },
		"pool":     func(context.Context) any { return h.admin.Pool() },
		"failures": func(context.Context) any { return h.admin.Failures() },
		"history":  func(context.Context) any { return h.admin.History() },
		"shares":   h.sharesDoc,
	}
}

// warnWildcard warns when the host listens on every interface without a
// public_url: the Agent Card would publish the wildcard address, which no
// client can reach.
func (h *Host) warnWildcard() {
	host, _, err := net.SplitHostPort(h.cfg.Listen)
	if err != nil || h.cfg.PublicURL != "" {
		return
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		h.log.Warn("listening on every interface without public_url: the Agent Card publishes "+h.publicURL()+
			", which clients cannot reach; set public_url to the URL they use", "listen", h.cfg.Listen)
	}
}

// Addr is the HTTP listener's address (nil when HTTP is off).
func (h *Host) Addr() net.Addr {
	if h.ln == nil {
		return nil
	}
	return h.ln.Addr()
}

// Close stops background work, closes every plugin, the sandbox and the
// store. It is idempotent; Serve already calls it.
func (h *Host) Close(ctx context.Context) error {
	var errs []error
	h.once.Do(func() {
		h.stopBg()
		h.wg.Wait()
		if h.ln != nil && !h.served.Load() {
			errs = append(errs, h.ln.Close())
		}
		if h.grpc != nil && !h.grpc.served.Load() {
			errs = append(errs, h.shutdownGRPC(ctx))
		}
		if h.tasks != nil {
			errs = append(errs, h.tasks.Close(ctx))
		}
		if h.parts != nil {
			errs = append(errs, h.parts.Close(ctx))
		}
		if h.traces != nil {
			errs = append(errs, h.traces.Shutdown(ctx)) // flushes the spans not yet exported
		}
	})
	return errors.Join(errs...)
}
