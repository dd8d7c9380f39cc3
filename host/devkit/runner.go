package devkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/assemble"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/store"
)

// harness is one plugin loaded in a real sandbox behind a real registry,
// assembled as `serve` assembles it, with a throwaway state store holding
// one open session for context calls.
type harness struct {
	parts   *assemble.Root
	reg     *plugin.Registry
	plugin  *plugin.Plugin
	session string
}

// harnessOptions configure newHarness.
type harnessOptions struct {
	cacheDir     string
	allowPrivate []netip.Prefix
	logger       *slog.Logger
}

// newHarness loads the plugin folder dir under devPolicy and the default
// network policy (plus allowPrivate).
func newHarness(ctx context.Context, dir string, m *plugin.Manifest, o harnessOptions) (_ *harness, err error) {
	cfg := config.Defaults()
	cfg.Policy = devPolicy(m)
	for _, p := range o.allowPrivate {
		cfg.Net.AllowPrivate = append(cfg.Net.AllowPrivate, p.String())
	}
	parts, err := assemble.Build(ctx, assemble.Spec{Config: cfg, Purpose: assemble.Test, CacheDir: o.cacheDir, Logger: o.logger,
		LoadLogger: slog.New(slog.DiscardHandler)}) // load errors are returned
	if err != nil {
		return nil, err
	}
	h := &harness{parts: parts, reg: parts.Registry}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.close(context.WithoutCancel(ctx)))
		}
	}()
	sess, err := parts.Store.CreateSession(ctx, store.Session{ID: store.NewSessionID(), AgentID: "plugin-test"})
	if err != nil {
		return nil, fmt.Errorf("state store: %w", err)
	}
	h.session = sess.ID
	if h.plugin, err = h.reg.Load(ctx, dir); err != nil {
		return nil, errors.New(strings.Join(splitErrors(err), "; ")) // one line
	}
	// The module compiles in the background; the examples run on it
	// compiled (a first example must not outwait its deadline behind the
	// compile, plugin_loading), and a module that does not compile is
	// this harness's error.
	if err := h.reg.WaitCompiled(ctx); err != nil {
		return nil, err
	}
	for _, p := range h.reg.Problems() {
		if filepath.Clean(p.Path) == filepath.Clean(h.plugin.Dir) {
			return nil, errors.New(p.Message)
		}
	}
	return h, nil
}

// close releases everything newHarness made.
func (h *harness) close(ctx context.Context) error { return h.parts.Close(ctx) }
