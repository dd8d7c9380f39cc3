// Package assemble builds what every command runs plugins with — the
// sandbox runtime, the state store and the plugin registry, wired to the host
// functions under the operator's policy — from one config.Config, and takes
// it apart in reverse order. `serve` (host.New), `card` (host.Card) and the
// plugin devkit (`plugin test`, `plugin validate`) all use it, so a plugin
// loads and behaves the same under each.
//
//	parts, err := assemble.New(ctx, assemble.Spec{Config: cfg, Store: assemble.DataStore, CacheDir: dir})
//	if err != nil { … }
//	defer parts.Close(ctx)
//	err = parts.Registry.LoadDir(ctx, cfg.Plugins) // or parts.Registry.Load(ctx, oneFolder)
//
// Parts are safe for concurrent use; Close once.
package assemble

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"

	extism "github.com/extism/go-sdk"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/agents"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/remote"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/store"
)

// StoreMode says which state store the parts get.
type StoreMode int

// The store modes.
const (
	// NoStore opens none: the context host functions answer "unavailable"
	// (card: plugins are loaded, never called).
	NoStore StoreMode = iota
	// DataStore opens the configured store: cfg.NATS, or a server embedded
	// under cfg.Data (serve).
	DataStore
	// TempStore embeds a throwaway server in a temporary folder that Close
	// removes (plugin test).
	TempStore
)

// tempBucketBytes caps each bucket of a TempStore.
const tempBucketBytes = 64 << 20

// Spec says what to build.
type Spec struct {
	// Config supplies the policy, the network policy (net.*), the store
	// limits (store.*) and, for DataStore, cfg.NATS and cfg.Data.
	Config config.Config
	// Store selects the state store. Optional. Default: NoStore.
	Store StoreMode
	// CacheDir is wazero's compilation cache. Optional. Default: "" (in
	// memory).
	CacheDir string
	// Logger receives plugin logs and host diagnostics. Optional. Default:
	// discard.
	Logger *slog.Logger
	// LoadLogger receives the registry's load, reload and problem messages.
	// Optional. Default: Logger.
	LoadLogger *slog.Logger
	// Observer sees the registry's skill calls and load events (metrics,
	// access logs, the admin endpoints). Optional. Default: none.
	Observer plugin.Observer
	// Tracer records a span per skill call (tracing.*). Optional.
	// Default: none.
	Tracer trace.Tracer
	// Guard takes a principal's rate token for each nested agent call.
	// Optional. Default: none.
	Guard *auth.Guard
	// RemoteObserver counts remote-agent attempts, breaker changes and
	// fallbacks. Optional. Default: none.
	RemoteObserver RemoteObserver
}

// RemoteObserver receives remote-agent metrics (*metrics.Remote).
type RemoteObserver interface {
	remote.Observer
	agents.Observer
}

// Parts are the assembled runtime, store and registry.
type Parts struct {
	Store    *store.Store // nil with NoStore
	Runtime  *sandbox.Runtime
	Registry *plugin.Registry
	// Net is the net.* policy plugins fetch under; plan webhooks are sent
	// under it too.
	Net hostfn.NetPolicy
	// Peers are the remote agents (agents.remote).
	Peers *remote.Peers
	// Router routes agent calls to plugins and peers: agent/call, the
	// agent_call host function, plan steps.
	Router *agents.Router
	// Settings are the operator's plugins.<name> settings each plugin's
	// config is merged from.
	Settings *Settings

	tmp string // TempStore's folder
}

// New builds the parts: store, runtime, then the registry. On error it
// closes what it built.
func New(ctx context.Context, spec Spec) (_ *Parts, err error) {
	log := spec.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := spec.Config
	net, err := netPolicy(cfg.Net)
	if err != nil {
		return nil, err
	}
	trust, err := Trust(cfg.Trust)
	if err != nil {
		return nil, err
	}
	p := &Parts{Net: net, Settings: NewSettings(cfg.PluginSettings)}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Close(context.WithoutCancel(ctx)))
		}
	}()
	if p.Store, err = p.openStore(ctx, spec, log); err != nil {
		return nil, fmt.Errorf("state store: %w", err)
	}
	if p.Runtime, err = sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{
		CacheDir: spec.CacheDir, Logger: log, MaxLiveBytes: uint64(cfg.Sandbox.MaxLiveBytes),
		MaxCodeBytes: uint64(cfg.Sandbox.MaxCodeBytes), CompileWorkers: cfg.Sandbox.CompileWorkers,
	}); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	deps := hostfn.Deps{Logger: log, Net: net}
	if p.Store != nil {
		deps.Context = p.Store
	}
	var obs RemoteObserver = nopObserver{}
	if spec.RemoteObserver != nil {
		obs = spec.RemoteObserver
	}
	if p.Peers, err = remote.New(context.WithoutCancel(ctx), cfg.Agents.Remote, remote.Options{Logger: log, Observer: obs}); err != nil {
		return nil, err
	}
	p.Registry = plugin.NewRegistry(p.Runtime, plugin.RegistryOptions{
		Policy: cfg.Policy,
		HostFunctions: func(m *plugin.Manifest) []extism.HostFunction {
			d := deps
			if p.Router != nil { // set below, before any plugin loads
				d.Agents = p.Router
			}
			return hostfn.New(d, hostfn.Grant{Plugin: m.Name, AllowedHosts: m.Permissions.AllowedHosts, Agents: m.Permissions.Agents})
		},
		Logger:   cmp.Or(spec.LoadLogger, log),
		Observer: spec.Observer,
		Tracer:   spec.Tracer,
		Trust:    trust,
		Config:   p.Settings.Config,
	})
	p.Router = agents.New(p.Registry, p.Peers, agents.Config{MaxDepth: cfg.Agents.MaxCallDepth, Guard: spec.Guard, Logger: log, Observer: obs})
	return p, nil
}

type nopObserver struct{}

func (nopObserver) Attempt(string, string)      {}
func (nopObserver) BreakerState(string, string) {}
func (nopObserver) Fallback(string, string)     {}

func (p *Parts) openStore(ctx context.Context, spec Spec, log *slog.Logger) (*store.Store, error) {
	c := spec.Config.Store
	sc := store.Config{
		Replicas: c.Replicas, StartTimeout: c.StartTimeout, Logger: log,
		MaxValueBytes: int(c.MaxValue), MaxContextTTL: c.MaxContextTTL,
		MaxKeysPerSession: c.MaxKeysPerSession, MaxSessionBytes: int64(c.MaxSessionBytes),
		ClosedSessionRetention: c.ClosedSessionRetention,
	}
	switch spec.Store {
	case DataStore:
		if err := os.MkdirAll(spec.Config.Data, 0o700); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		sc.URL, sc.DataDir = spec.Config.NATS, spec.Config.Data
	case TempStore:
		dir, err := os.MkdirTemp("", "skillhost-state-")
		if err != nil {
			return nil, err
		}
		p.tmp = dir
		sc.DataDir, sc.Replicas, sc.MaxBucketBytes = filepath.Join(dir, "data"), 1, tempBucketBytes
	default:
		return nil, nil
	}
	return store.Open(ctx, sc)
}

// Close unloads every plugin (waiting for calls in flight), closes the
// sessions held on peers, then the runtime and the store, and removes a
// TempStore's folder.
func (p *Parts) Close(ctx context.Context) error {
	var errs []error
	if p.Registry != nil {
		errs = append(errs, p.Registry.Close(ctx))
	}
	if p.Peers != nil {
		errs = append(errs, p.Peers.Close(ctx))
	}
	if p.Runtime != nil {
		errs = append(errs, p.Runtime.Close(ctx))
	}
	if p.Store != nil {
		errs = append(errs, p.Store.Close())
	}
	if p.tmp != "" {
		errs = append(errs, os.RemoveAll(p.tmp))
	}
	return errors.Join(errs...)
}

// netPolicy turns the net.* configuration into http_fetch's policy.
func netPolicy(n config.Net) (hostfn.NetPolicy, error) {
	p := hostfn.NetPolicy{Timeout: n.Timeout, MaxResponseBytes: int64(n.MaxResponse), MaxRedirects: n.MaxRedirects}
	for _, s := range n.AllowPrivate {
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			addr, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return p, fmt.Errorf("config net.allow_private: %q is not an address or CIDR prefix", s)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		p.AllowPrivate = append(p.AllowPrivate, prefix)
	}
	return p, nil
}
