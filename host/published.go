package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/store"
)

// publishedDir is where a host unpacks the cluster's published plugins,
// under its data directory.
const publishedDir = "plugins-published"

// setupPublished serves the plugins published to the cluster
// (`skillhost plugin publish`): in cluster mode, with published_plugins on,
// they are unpacked under <data>/plugins-published and loaded after the local
// folder, with the same validation and policy; with hot_reload on, later
// publications and deletions apply live.
func (h *Host) setupPublished(ctx context.Context) error {
	if h.cfg.NATS == "" || !h.cfg.PublishedPlugins {
		return nil
	}
	obj, err := publishedStore(ctx, h.store)
	if err != nil {
		return err
	}
	m := plugin.NewMirror(h.registry, obj, filepath.Join(h.cfg.Data, publishedDir))
	if err := m.Sync(ctx); err != nil {
		h.log.Error("some published plugins failed to load; the others are served", "err", err)
	}
	if !h.cfg.HotReload {
		return nil
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			err := m.Run(h.bg)
			if h.bg.Err() != nil {
				return
			}
			h.log.Warn("published plugins: watch interrupted; resuming", "err", err)
			select {
			case <-h.bg.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return nil
}

func publishedStore(ctx context.Context, st *store.Store) (*store.Objects, error) {
	obj, err := st.OpenObjects(ctx, store.ObjectsConfig{
		Name: plugin.PublishedBucket, Description: "skillhost plugins served by every host (skillhost plugin publish)",
	})
	if err != nil {
		return nil, fmt.Errorf("published plugins: %w", err)
	}
	return obj, nil
}

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
		opts.MaxModuleBytes = int64(config.DefaultPolicy().MaxModuleBytes)
	}
	if _, _, err := plugin.Pack(dir, opts.MaxModuleBytes); err != nil { // before any connection
		return "", err
	}
	var name string
	err := withPublished(ctx, opts, func(obj *store.Objects) error {
		var err error
		name, err = plugin.Publish(ctx, obj, dir, opts.MaxModuleBytes)
		return err
	})
	return name, err
}

// UnpublishPlugin deletes the published plugin name from the cluster at
// opts.NATS; every host unloads it.
func UnpublishPlugin(ctx context.Context, name string, opts PublishOptions) error {
	return withPublished(ctx, opts, func(obj *store.Objects) error {
		return plugin.Unpublish(ctx, obj, name)
	})
}

// ErrNotPublished is UnpublishPlugin's error for a plugin not published.
var ErrNotPublished = plugin.ErrNotPublished

func withPublished(ctx context.Context, opts PublishOptions, f func(*store.Objects) error) error {
	if opts.NATS == "" {
		return errors.New("publishing needs the cluster's NATS URL (--nats)")
	}
	st, err := store.Open(ctx, store.Config{URL: opts.NATS, Logger: opts.Logger, StartTimeout: 20 * time.Second})
	if err != nil {
		return err
	}
	defer st.Close()
	obj, err := publishedStore(ctx, st)
	if err != nil {
		return err
	}
	return f(obj)
}
