package host

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/assemble"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// PublishOptions configure PublishPlugin and UnpublishPlugin.
type PublishOptions struct {
	// NATS is the cluster's URL(s), comma-separated. Required.
	NATS string
	// MaxModuleBytes caps the module published. Optional. Default: the
	// default policy's (64 MiB); hosts apply their own policy on load.
	MaxModuleBytes int64
	// Logger receives connection events. Optional. Default: none.
	Logger *slog.Logger
}

// PublishPlugin validates the plugin folder dir and publishes it to the
// cluster at opts.NATS, replacing an earlier publication of the same plugin;
// every host of the cluster then loads it. It returns the plugin's name.
func PublishPlugin(ctx context.Context, dir string, opts PublishOptions) (string, error) {
	if opts.MaxModuleBytes <= 0 {
		opts.MaxModuleBytes = int64(config.Defaults().Policy.MaxModuleBytes)
	}
	if _, _, err := plugin.Pack(dir, opts.MaxModuleBytes); err != nil { // before any connection
		return "", err
	}
	var name string
	err := withPublished(ctx, opts, func(root *assemble.Root) error {
		var err error
		name, err = root.Publish(ctx, dir, opts.MaxModuleBytes)
		return err
	})
	return name, err
}

// UnpublishPlugin deletes the published plugin name from the cluster at
// opts.NATS; every host unloads it.
func UnpublishPlugin(ctx context.Context, name string, opts PublishOptions) error {
	return withPublished(ctx, opts, func(root *assemble.Root) error {
		return root.Unpublish(ctx, name)
	})
}

// ErrNotPublished is UnpublishPlugin's error for a plugin not published.
var ErrNotPublished = plugin.ErrNotPublished

// publishStartTimeout bounds the wait for the cluster's JetStream: a
// command, not a host that may start before its cluster.
const publishStartTimeout = 20 * time.Second

// withPublished runs f on a root of the Publish purpose: the store
// component, connected to the cluster.
func withPublished(ctx context.Context, opts PublishOptions, f func(*assemble.Root) error) (err error) {
	if opts.NATS == "" {
		return errors.New("publishing needs the cluster's NATS URL (--nats)")
	}
	cfg := config.Defaults()
	cfg.NATS, cfg.Store.StartTimeout = opts.NATS, publishStartTimeout
	root, err := assemble.Build(ctx, assemble.Spec{Config: cfg, Purpose: assemble.Publish, Logger: opts.Logger})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, root.Close(ctx)) }()
	return f(root)
}
