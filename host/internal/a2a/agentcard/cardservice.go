package agentcard

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// CacheControl is the Cache-Control value transports send with a card.
const CacheControl = "public, max-age=60"

// Service renders and caches the Agent Cards of a registry: the host card
// and one card per plugin. Cards are regenerated whenever the snapshot
// changes (a new *plugin.Snapshot), so the ETag changes with the skill set.
type Service struct {
	cfg      Config
	snapshot func() *plugin.Snapshot
	extended bool
	signer   *identity.Signer
	logger   *slog.Logger

	mu     sync.Mutex
	forSn  *plugin.Snapshot
	host   renderedCard
	agents map[string]renderedCard
}

type renderedCard struct {
	card *a2av1.AgentCard
	body []byte
	etag string
}

// Options configure a Service.
type Options struct {
	// ExtendedCard makes GetExtendedAgentCard return the host card (and the
	// card advertise capabilities.extendedAgentCard); false answers -32007.
	ExtendedCard bool
	Logger       *slog.Logger
	// Signer signs every card (JWS in its signatures, re-signed whenever
	// the card changes) and is published in the identity extension.
	// Optional. Default: cards are not signed.
	Signer *identity.Signer
}

// NewService returns a Service reading snapshots from snapshot
// (typically (*plugin.Registry).Snapshot).
func NewService(cfg Config, snapshot func() *plugin.Snapshot, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{cfg: cfg.withDefaults(), snapshot: snapshot, extended: opts.ExtendedCard, signer: opts.Signer, logger: opts.Logger}
}

// Update drops the cached cards so the next request renders them from the
// registry's new snapshot; pass it to (*plugin.Registry).OnChange. (Card
// also notices a changed snapshot by itself.)
func (c *Service) Update(*plugin.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.host = renderedCard{}
}

func (c *Service) current(ctx context.Context) error {
	snap := c.snapshot()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host.body != nil && snap == c.forSn {
		return nil
	}
	return c.renderLocked(ctx, snap)
}

func (c *Service) renderLocked(ctx context.Context, snap *plugin.Snapshot) error {
	host := Build(c.cfg, snap)
	host.Capabilities.ExtendedAgentCard = c.extended
	if len(host.Skills) == 0 {
		c.logger.Warn("agent card has no skills: no plugin is loaded; A2A clients will find nothing to call")
	}
	var plugins []*plugin.Plugin
	if snap != nil {
		plugins = snap.Plugins
	}
	rh, err := c.render(ctx, host, plugins)
	if err != nil {
		return err
	}
	agents := map[string]renderedCard{}
	if snap != nil {
		for _, p := range snap.Plugins {
			if p == nil || p.Manifest == nil {
				continue
			}
			r, err := c.render(ctx, BuildAgent(c.cfg, p), []*plugin.Plugin{p})
			if err != nil {
				return err
			}
			agents[p.Manifest.Name] = r
		}
	}
	c.forSn, c.host, c.agents = snap, rh, agents
	c.logger.Info("agent card generated", "etag", rh.etag, "skills", len(host.Skills))
	return nil
}

// render adds the signing extensions to card, signs it when the service
// has a signer and encodes it.
func (c *Service) render(ctx context.Context, card *a2av1.AgentCard, plugins []*plugin.Plugin) (renderedCard, error) {
	withSigningExtensions(card, c.signer, plugins)
	if err := signCard(ctx, card, c.signer); err != nil {
		return renderedCard{}, err
	}
	body, err := MarshalUnion(ctx, card)
	if err != nil {
		return renderedCard{}, err
	}
	sum := sha256.Sum256(body)
	return renderedCard{card: card, body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}, nil
}

// Card returns the host card (union of the v1.0 and v0.3 shapes) and its
// strong ETag. Serve it at WellKnownPath with Cache-Control CacheControl.
func (c *Service) Card(ctx context.Context) ([]byte, string, error) {
	if err := c.current(ctx); err != nil {
		return nil, "", fault.Wrap(fault.Internal, fault.ReasonInternal, err, "agent card generation failed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host.body, c.host.etag, nil
}

// HostCard returns the host card as a v1.0 object (shared: do not modify).
func (c *Service) HostCard(ctx context.Context) (*a2av1.AgentCard, error) {
	if err := c.current(ctx); err != nil {
		return nil, fault.Wrap(fault.Internal, fault.ReasonInternal, err, "agent card generation failed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host.card, nil
}

// AgentCard returns the card of the plugin called name, served at
// AgentCardPath(name); AgentNotFound (-32102) when no such plugin is loaded.
func (c *Service) AgentCard(ctx context.Context, name string) ([]byte, string, error) {
	if err := c.current(ctx); err != nil {
		return nil, "", fault.Wrap(fault.Internal, fault.ReasonInternal, err, "agent card generation failed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.agents[name]
	if !ok {
		return nil, "", fault.New(fault.AgentNotFound, fault.ReasonUnknownAgent, fmt.Sprintf("no plugin named %q is loaded", truncate(name, 64)))
	}
	return r.body, r.etag, nil
}

// ExtendedCard answers GetExtendedAgentCard: the card of the host (or of
// the plugin tenant names) listing only the skills the caller's principal
// may run (its skill: and agent: scopes), when the service was built with
// ExtendedCard; else ExtendedCardNotConfigured (-32007).
func (c *Service) ExtendedCard(ctx context.Context, tenant string) (*a2av1.AgentCard, error) {
	if !c.extended {
		return nil, fault.New(fault.ExtendedCardNotConfigured, fault.ReasonExtendedCardNotConfigured, "this host has no extended agent card")
	}
	who := auth.From(ctx)
	keep := func(p *plugin.Plugin, s *plugin.Skill) bool { return who.AllowSkill(p.Manifest.Name, s.ID) == nil }
	snap := c.snapshot()
	var plugins []*plugin.Plugin
	if snap != nil {
		plugins = snap.Plugins
	}
	name, desc, version := c.cfg.Name, c.cfg.Description, c.cfg.Version
	if tenant != "" {
		p, ok := pluginNamed(plugins, tenant)
		if !ok {
			return nil, fault.Newf(fault.InvalidParams, fault.ReasonUnknownTenant, "no agent (plugin) named %q", truncate(tenant, 64))
		}
		plugins = []*plugin.Plugin{p}
		name, desc, version = p.Manifest.Name, cmp.Or(p.Manifest.Description, p.Manifest.Name), p.Manifest.Version
	}
	card := buildCard(c.cfg, name, desc, version, tenant, plugins, keep)
	card.Capabilities.ExtendedAgentCard = true
	var visible []*plugin.Plugin // the plugin signatures extension names only plugins the caller sees
	for _, p := range plugins {
		if slices.ContainsFunc(p.Manifest.Skills, func(s *plugin.Skill) bool { return keep(p, s) }) {
			visible = append(visible, p)
		}
	}
	withSigningExtensions(card, c.signer, visible)
	if err := signCard(ctx, card, c.signer); err != nil {
		return nil, err
	}
	return card, nil
}

// AgentCardPath is the HTTP path of a plugin's card.
func AgentCardPath(name string) string {
	return AgentCardPathPrefix + name + WellKnownPath
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// pluginNamed is the plugin of ps called name.
func pluginNamed(ps []*plugin.Plugin, name string) (*plugin.Plugin, bool) {
	for _, p := range ps {
		if p != nil && p.Manifest != nil && p.Manifest.Name == name {
			return p, true
		}
	}
	return nil, false
}
