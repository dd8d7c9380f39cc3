package assemble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// fsDir is where Spec.Plugins is copied, under the data directory.
const fsDir = "plugins-fs"

// pluginDir is the folder the plugins component loads: cfg.Plugins, or the
// copy of Spec.Plugins.
func (h *Root) pluginDir() string {
	if h.spec.Plugins != nil {
		return filepath.Join(h.cfg.Data, fsDir)
	}
	return h.cfg.Plugins
}

// provisionPlugins loads the plugin folder (Spec.Plugins copied into one
// first); they compile in the background, except for a Serve root without
// HTTP (stdio only), which waits for their first compiles. A broken plugin
// is logged and skipped, never fatal; LoadProblems lists them.
func (h *Root) provisionPlugins(ctx context.Context) error {
	dir := h.pluginDir()
	switch {
	case h.spec.Plugins != nil:
		if err := copyFS(dir, h.spec.Plugins, int64(h.cfg.Policy.MaxModuleBytes)); err != nil {
			return fmt.Errorf("plugins: %w", err)
		}
	case h.purpose&Serve == 0:
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("plugin folder: %w", err)
		}
	default:
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			h.log.Warn("plugin folder missing; serving no skills until it appears", "plugins", dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("plugin folder %s: %w", dir, err)
			}
		}
	}
	h.log.Info("loading plugins (the first start compiles them, in the background; later starts use the cache)", "dir", dir)
	if h.loadErr = h.Registry.LoadDir(ctx, dir); h.loadErr != nil {
		h.log.Error("some plugins failed to load; the others are served", "err", h.loadErr)
	}
	if h.purpose&Serve != 0 && h.cfg.Listen == "" {
		// One local client on stdio would find its plugins compiling: it
		// gets them compiled (a host on HTTP serves at once meanwhile).
		h.log.Info("serving stdio only: compiling the plugins before reading input")
		if err := h.Registry.WaitCompiled(ctx); err != nil {
			return err
		}
	}
	snap := h.Registry.Snapshot()
	h.log.Info("plugins loaded", "plugins", len(snap.Plugins), "problems", len(snap.Problems), "dir", dir)
	return nil
}

// LoadProblems are the plugin folder's load errors, one line each (the
// plugins left out).
func (h *Root) LoadProblems() []string {
	if h.loadErr == nil {
		return nil
	}
	return strings.Split(h.loadErr.Error(), "\n")
}

// provisionReload watches the plugin folder (hot_reload) and applies
// changes live. Spec.Plugins does not change, so it is not watched.
func (h *Root) provisionReload(context.Context) error {
	if !h.cfg.HotReload || h.spec.Plugins != nil {
		return nil
	}
	dir := h.pluginDir()
	h.background("hot reload", func(ctx context.Context) {
		if err := h.Registry.Watch(ctx, dir); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Error("hot reload stopped", "err", err)
		}
	})
	return nil
}

// copyFS replaces dir with the regular files and folders of src, each file
// at most limit bytes (policy.max_module_bytes: no file of a plugin folder
// may be larger than its module). Anything else (a symlink, a device) is
// refused.
func copyFS(dir string, src fs.FS, limit int64) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return fs.WalkDir(src, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(dir, filepath.FromSlash(name))
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file", name)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Size() > limit {
			return fmt.Errorf("%s: %d bytes, over policy.max_module_bytes (%d)", name, fi.Size(), limit)
		}
		return copyFile(to, src, name, limit)
	})
}

// copyFile copies the file name of src to path, refusing it when it grows
// past limit while it is read.
func copyFile(path string, src fs.FS, name string, limit int64) (err error) {
	in, err := src.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	n, err := io.Copy(out, io.LimitReader(in, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("%s: over policy.max_module_bytes (%d)", name, limit)
	}
	return err
}
