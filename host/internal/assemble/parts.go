package assemble

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	extism "github.com/extism/go-sdk"

	"github.com/skillhost/skillhost/host/internal/admin"
	"github.com/skillhost/skillhost/host/internal/agents"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/remote"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/store"
)

// provisionKeys reads the API keys (auth.keys): HTTP's credentials and
// whether the cards advertise security schemes and an extended card.
func (h *Root) provisionKeys(context.Context) (err error) {
	h.keys, err = h.cfg.Auth.KeySet()
	return err
}

// provisionTLS loads http.tls: TLS 1.2 or later with the configured pair
// (none when HTTPS is not configured).
func (h *Root) provisionTLS(context.Context) error {
	c := h.cfg.HTTP
	if !c.TLSEnabled() {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile)
	if err != nil {
		return fmt.Errorf("config http.tls: %w", err)
	}
	h.tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	return nil
}

// provisionListener binds cfg.Listen before anything is opened or
// compiled, so a port in use fails the start at once and Addr is known
// before Serve. Without listen, or with Spec.NoListener, it binds nothing.
func (h *Root) provisionListener(context.Context) (err error) {
	if h.cfg.Listen == "" || h.spec.NoListener {
		return nil
	}
	if h.ln, err = net.Listen("tcp", h.cfg.Listen); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen %s: %w (another process serves this port: stop it, or choose another with --listen; with make: make run LISTEN=127.0.0.1:8081)", h.cfg.Listen, err)
		}
		return fmt.Errorf("listen %s: %w", h.cfg.Listen, err)
	}
	h.onClose("listener", func(context.Context) error {
		if h.served.Load() { // the HTTP server owns it now
			return nil
		}
		return h.ln.Close()
	})
	h.warnWildcard()
	return nil
}

// provisionTracing starts the OTLP exporter of tracing.* (none when off).
func (h *Root) provisionTracing(ctx context.Context) (err error) {
	if h.traces, err = newTracing(ctx, h.cfg.Tracing, h.version); err != nil || h.traces == nil {
		return err
	}
	h.tracer = h.traces.Tracer("github.com/skillhost/skillhost/host")
	h.log.Info("tracing: spans are exported over OTLP/HTTP", "endpoint", h.cfg.Tracing.OTLPEndpoint, "sample_ratio", h.cfg.Tracing.SampleRatio)
	h.onClose("tracing", h.traces.Shutdown) // flushes the spans not yet exported
	return nil
}

// provisionMetrics makes the metrics registry, the failure ring, the
// registry's observer and the guard of running calls.
func (h *Root) provisionMetrics(context.Context) error {
	h.metrics = metrics.New()
	h.failures = admin.NewRing(admin.DefaultRingSize)
	h.observer = &observer{metrics: h.metrics, failures: h.failures}
	h.guard = auth.NewGuard(nil, h.cfg.RPC.MaxRunningCalls)
	h.remoteMetrics = metrics.NewRemote(h.metrics.Registry())
	return nil
}

// tempBucketBytes caps each bucket of a Test store.
const tempBucketBytes = 64 << 20

// provisionStore opens the state store: Spec.NATS, else cfg.NATS, else a
// server embedded under cfg.Data (Serve) or a throwaway one in a temporary
// folder (Test).
func (h *Root) provisionStore(ctx context.Context) (err error) {
	sc := store.Config{Store: h.cfg.Store, Logger: h.log, Conn: h.spec.NATS}
	local := h.spec.NATS == nil && h.cfg.NATS == ""
	switch {
	case local && h.purpose&Test != 0:
		if h.tmp, err = os.MkdirTemp("", "skillhost-state-"); err != nil {
			return err
		}
		tmp := h.tmp
		h.onClose("store folder", func(context.Context) error { return os.RemoveAll(tmp) })
		sc.DataDir, sc.Replicas, sc.MaxBucketBytes = filepath.Join(tmp, "data"), 1, tempBucketBytes
	case local && h.purpose&Serve != 0:
		if err := os.MkdirAll(h.cfg.Data, 0o700); err != nil {
			return fmt.Errorf("state store: data directory: %w", err)
		}
		sc.DataDir = h.cfg.Data
	default:
		sc.URL = h.cfg.NATS
		if h.purpose&Serve != 0 { // the boot file (a restart ends its previous boot's tasks at once)
			sc.DataDir = h.cfg.Data
		}
	}
	if h.Store, err = store.Open(ctx, sc); err != nil {
		return fmt.Errorf("state store: %w", err)
	}
	h.onClose("store", func(context.Context) error { return h.Store.Close() })
	return nil
}

// provisionRuntime starts the sandbox runtime (sandbox.*: the memory and
// code budgets, the compile workers).
func (h *Root) provisionRuntime(ctx context.Context) (err error) {
	cache := h.spec.CacheDir
	if cache == "" && h.purpose&Serve != 0 {
		cache = filepath.Join(h.cfg.Data, "wazero-cache")
	}
	if h.Runtime, err = sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{
		CacheDir: cache, Logger: h.log, MaxLiveBytes: uint64(h.cfg.Sandbox.MaxLiveBytes),
		MaxCodeBytes: uint64(h.cfg.Sandbox.MaxCodeBytes), CompileWorkers: h.cfg.Sandbox.CompileWorkers,
	}); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	h.onClose("runtime", h.Runtime.Close)
	if h.purpose&Serve != 0 {
		h.log.Info("sandbox memory budget (sandbox.max_live_bytes)", "bytes", h.Runtime.Stats().BudgetBytes)
	}
	return nil
}

// provisionPeers builds the remote agents of agents.remote (their
// credentials are read here).
func (h *Root) provisionPeers(ctx context.Context) (err error) {
	if h.Peers, err = remote.New(context.WithoutCancel(ctx), h.cfg.Agents.Remote, remote.Options{Logger: h.log, Observer: h.remoteObserver()}); err != nil {
		return err
	}
	if h.remoteMetrics != nil {
		h.remoteMetrics.WatchBreakers(h.Peers.Breakers)
	}
	h.onClose("peers", h.Peers.Close) // the sessions held on peers
	return nil
}

// remoteObserver counts remote-agent attempts, breaker changes and
// fallbacks (none without metrics).
func (h *Root) remoteObserver() interface {
	remote.Observer
	agents.Observer
} {
	if h.remoteMetrics == nil {
		return nopObserver{}
	}
	return h.remoteMetrics
}

type nopObserver struct{}

func (nopObserver) Attempt(string, string)      {}
func (nopObserver) BreakerState(string, string) {}
func (nopObserver) Fallback(string, string)     {}

// provisionRegistry builds the plugin registry under the policy, the
// signature trust and the operator's settings, with the host functions
// under net.*, then the agent router over the registry and the peers. The
// agent_call host function routes through a router over the registry
// that loads the plugin (plugin.RegistryOptions.HostFunctions gets it), so
// neither needs the other before it exists.
func (h *Root) provisionRegistry(context.Context) (err error) {
	if h.Net, err = hostfn.NetPolicyOf(h.cfg.Net); err != nil {
		return err
	}
	trust, err := Trust(h.cfg.Trust)
	if err != nil {
		return err
	}
	h.Settings = NewSettings(h.cfg.PluginSettings)
	deps := hostfn.Deps{Logger: h.log, Net: h.Net}
	if h.Store != nil {
		deps.Context = h.Store
	}
	route := agents.Config{MaxDepth: h.cfg.Agents.MaxCallDepth, Guard: h.guard, Logger: h.log, Observer: h.remoteObserver()}
	opts := plugin.RegistryOptions{
		Policy: h.cfg.Policy,
		HostFunctions: func(m *plugin.Manifest, reg *plugin.Registry) []extism.HostFunction {
			d := deps
			d.Agents = agents.New(reg, h.Peers, route)
			return hostfn.New(d, hostfn.Grant{Plugin: m.Name, AllowedHosts: m.Permissions.AllowedHosts, Agents: m.Permissions.Agents})
		},
		Logger:     cmp.Or(h.spec.LoadLogger, h.log),
		Trust:      trust,
		Config:     h.Settings.Config,
		Settings:   h.Settings.Digest,
		WatchFiles: h.Settings.Files(),
		Tracer:     h.tracer,
	}
	if h.observer != nil {
		opts.Observer = h.observer
	}
	h.Registry = plugin.NewRegistry(h.Runtime, opts)
	h.onClose("registry", h.Registry.Close) // unloads every plugin, waiting for calls in flight
	h.Router = agents.New(h.Registry, h.Peers, route)
	if h.observer != nil {
		h.Registry.OnChange(h.observer.plugins)
	}
	return nil
}

// provisionAdmin builds the documents of GET /admin/… over the registry,
// the runtime and the metrics.
func (h *Root) provisionAdmin(context.Context) error {
	h.admin = admin.New(admin.Deps{Registry: h.Registry, Runtime: h.Runtime, Metrics: h.metrics, Failures: h.failures,
		Version: h.version, PublishedDir: filepath.Join(h.cfg.Data, publishedDir), Ready: h.Store.Ready,
		OCIDir: filepath.Join(h.cfg.Data, ociDir), Sources: h.ociStates, Settings: h.Settings.View})
	h.metrics.Watch(h.admin.Metrics())
	return nil
}
