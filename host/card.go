package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/assemble"
)

// CardOptions say which card Card renders and where it may cache compiled plugins.
type CardOptions struct {
	// Version is reported in the card. Default: "dev".
	Version string
	// Agent selects one plugin's own card. Default: "" (the host card).
	Agent string
	// CacheDir is the wazero compilation cache. Default: "" (no cache).
	CacheDir string
}

// Card loads cfg's plugin folder, without opening the state store or
// listening, and returns the Agent Card exactly as a host with cfg would
// serve it, plus one line per plugin that failed to load (those are left
// out of the card).
func Card(ctx context.Context, cfg config.Config, opts CardOptions) (card []byte, problems []string, err error) {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if _, err := os.Stat(cfg.Plugins); err != nil {
		return nil, nil, fmt.Errorf("plugin folder: %w", err)
	}
	quiet := slog.New(slog.DiscardHandler) // problems are returned, not logged
	parts, err := assemble.New(ctx, assemble.Spec{Config: cfg, Store: assemble.NoStore, CacheDir: opts.CacheDir, Logger: quiet})
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = parts.Close(ctx) }()
	reg := parts.Registry
	if err := reg.LoadDir(ctx, cfg.Plugins); err != nil {
		problems = strings.Split(err.Error(), "\n")
	}
	base := publicBase(cfg, nil)
	keys, err := assemble.Keys(cfg.Identity, nil)
	if err != nil {
		return nil, problems, err
	}
	signer, err := newSigner(keys, base)
	if err != nil {
		return nil, problems, fmt.Errorf("config identity.key_file: %w", err)
	}
	apiKeys, err := cfg.Auth.KeySet()
	if err != nil {
		return nil, problems, err
	}
	cards := newCardService(cfg, opts.Version, base, apiKeys.Len() > 0, reg.Snapshot, signer, quiet)
	if opts.Agent != "" {
		card, _, err = cards.AgentCard(ctx, opts.Agent)
	} else {
		card, _, err = cards.Card(ctx)
	}
	if err != nil {
		return nil, problems, errors.New(strings.TrimPrefix(err.Error(), "Agent not found: "))
	}
	return card, problems, nil
}
