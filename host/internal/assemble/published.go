package assemble

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/store"
)

// publishedDir is where a host unpacks the cluster's published plugins,
// under its data directory.
const publishedDir = "plugins-published"

// provisionPublished serves the plugins published to the cluster
// (`skillhost plugin publish`): in cluster mode, with published_plugins on,
// they are unpacked under <data>/plugins-published and loaded after the local
// folder (a local plugin wins a name), with the same validation and policy;
// with hot_reload on, later publications and deletions apply live.
func (h *Root) provisionPublished(ctx context.Context) error {
	if h.cfg.NATS == "" && h.spec.NATS == nil || !h.cfg.PublishedPlugins {
		return nil
	}
	obj, err := h.PublishedPlugins(ctx)
	if err != nil {
		return err
	}
	m := plugin.NewMirror(h.Registry, obj, filepath.Join(h.cfg.Data, publishedDir))
	if err := m.Sync(ctx); err != nil {
		h.log.Error("some published plugins failed to load; the others are served", "err", err)
	}
	if !h.cfg.HotReload {
		return nil
	}
	h.background("published plugins", func(ctx context.Context) {
		for {
			err := m.Run(ctx)
			if ctx.Err() != nil {
				return
			}
			h.log.Warn("published plugins: watch interrupted; resuming", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
	return nil
}

// PublishedPlugins is the cluster's object store of published plugins
// (Serve, Publish).
func (h *Root) PublishedPlugins(ctx context.Context) (*store.Objects, error) {
	obj, err := h.Store.OpenObjects(ctx, store.ObjectsConfig{
		Name: plugin.PublishedBucket, Description: "skillhost plugins served by every host (skillhost plugin publish)",
	})
	if err != nil {
		return nil, fmt.Errorf("published plugins: %w", err)
	}
	return obj, nil
}

// Publish validates the plugin folder dir and publishes it to the cluster's
// published plugins (each module at most maxModule bytes), replacing an
// earlier publication of the same plugin; it returns the plugin's name
// (Serve, Publish).
func (h *Root) Publish(ctx context.Context, dir string, maxModule int64) (string, error) {
	obj, err := h.PublishedPlugins(ctx)
	if err != nil {
		return "", err
	}
	return plugin.Publish(ctx, obj, dir, maxModule)
}

// Unpublish deletes the published plugin name (plugin.ErrNotPublished when
// there is none); every host unloads it (Serve, Publish).
func (h *Root) Unpublish(ctx context.Context, name string) error {
	obj, err := h.PublishedPlugins(ctx)
	if err != nil {
		return err
	}
	return plugin.Unpublish(ctx, obj, name)
}
