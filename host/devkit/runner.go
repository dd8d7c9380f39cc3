package devkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/store"
)

// harness is one plugin loaded in a real sandbox behind a real registry,
// with an embedded state store and one open session for context calls.
type harness struct {
	tmp     string
	rt      *sandbox.Runtime
	st      *store.Store
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

// newHarness loads the plugin folder dir under DevPolicy.
func newHarness(ctx context.Context, dir string, m *plugin.Manifest, o harnessOptions) (*harness, error) {
	h := &harness{}
	if err := h.start(ctx, dir, m, o); err != nil {
		return nil, errors.Join(err, h.close(context.WithoutCancel(ctx)))
	}
	return h, nil
}

// start builds the harness; close undoes whatever it got to.
func (h *harness) start(ctx context.Context, dir string, m *plugin.Manifest, o harnessOptions) (err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if h.tmp, err = os.MkdirTemp("", "skillhost-plugin-test-"); err != nil {
		return err
	}
	// The registry loads the sub-folders of a root: link the plugin in.
	root := filepath.Join(h.tmp, "plugins")
	if err := os.Mkdir(root, 0o700); err != nil {
		return err
	}
	link := filepath.Join(root, m.Name)
	if err := os.Symlink(abs, link); err != nil {
		return err
	}
	if h.st, err = store.Open(ctx, store.Config{DataDir: filepath.Join(h.tmp, "data"), MaxBucketBytes: 64 << 20}); err != nil {
		return fmt.Errorf("state store: %w", err)
	}
	sess, err := h.st.CreateSession(ctx, store.Session{ID: store.NewSessionID(), AgentID: "plugin-test"})
	if err != nil {
		return fmt.Errorf("state store: %w", err)
	}
	h.session = sess.ID
	if h.rt, err = sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: o.cacheDir, Logger: o.logger}); err != nil {
		return err
	}
	d := config.Defaults().Net
	deps := hostfn.Deps{Context: h.st, Logger: o.logger, Net: hostfn.NetPolicy{
		AllowPrivate: o.allowPrivate, Timeout: d.Timeout, MaxResponseBytes: int64(d.MaxResponse), MaxRedirects: d.MaxRedirects,
	}}
	h.reg = plugin.NewRegistry(h.rt, plugin.RegistryOptions{
		Policy:        DevPolicy(m),
		Logger:        slog.New(slog.DiscardHandler), // its load errors are returned below
		HostFunctions: hostfn.ForPlugins(deps),
	})
	if err := h.reg.LoadDir(ctx, root); err != nil {
		// Name the user's folder, not the link, on one line.
		msgs := splitErrors(err)
		for i := range msgs {
			msgs[i] = strings.ReplaceAll(msgs[i], link, filepath.Clean(dir))
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	p, ok := h.reg.Snapshot().Plugin(m.Name)
	if !ok {
		return fmt.Errorf("plugin %s did not load", m.Name)
	}
	h.plugin = p
	return nil
}

// close releases everything newHarness made.
func (h *harness) close(ctx context.Context) error {
	var errs []error
	if h.reg != nil {
		errs = append(errs, h.reg.Close(ctx))
	}
	if h.rt != nil {
		errs = append(errs, h.rt.Close(ctx))
	}
	if h.st != nil {
		errs = append(errs, h.st.Close())
	}
	if h.tmp != "" {
		errs = append(errs, os.RemoveAll(h.tmp))
	}
	return errors.Join(errs...)
}
