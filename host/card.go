package host

import (
	"context"
	"errors"
	"log/slog"
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
// serve it — the root's card components, built without those that serve —
// plus one line per plugin that failed to load (those are left out of the
// card).
func Card(ctx context.Context, cfg config.Config, opts CardOptions) (card []byte, problems []string, err error) {
	root, err := assemble.Build(ctx, assemble.Spec{Config: cfg, Purpose: assemble.Card, Version: opts.Version,
		CacheDir: opts.CacheDir, Logger: slog.New(slog.DiscardHandler)}) // problems are returned, not logged
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = root.Close(ctx) }()
	problems = root.LoadProblems()
	if card, err = root.Card(ctx, opts.Agent); err != nil {
		return nil, problems, errors.New(strings.TrimPrefix(err.Error(), "Agent not found: "))
	}
	return card, problems, nil
}
