package plugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// maxReloadDelay bounds how long a burst of file events may postpone its
// rescan: a folder written to without pause (a log file, a sync tool) would
// otherwise reset the debounce forever and starve hot reload.
const maxReloadDelay = 2 * time.Second

// burst decides when a burst of file events is rescanned: Debounce after
// its last event, but never later than maxReloadDelay after its first.
type burst struct {
	quiet, limit time.Duration
	start        time.Time
	open         bool
}

// event records an event at now and returns how long to wait before the
// rescan.
func (b *burst) event(now time.Time) time.Duration {
	if !b.open {
		b.open, b.start = true, now
	}
	return max(0, min(b.quiet, b.limit-now.Sub(b.start)))
}

// rescanned ends the burst: the next event starts a new one.
func (b *burst) rescanned() { b.open = false }

// Watch hot-reloads dir until ctx ends, then returns nil. It watches dir,
// each plugin folder in it and the folders of WatchFiles; after a burst of file events settles (Debounce,
// 250ms by default: a copy writes many events), or at the latest 2s after
// the burst's first event (so events that never pause cannot starve it), it
// calls Reload. A new folder
// loads; a changed plugin.yaml or module is recompiled first and swapped in
// atomically only if it loads, else the old revision keeps serving and a
// Problem is recorded; a removed folder is unloaded once its calls in flight
// return. Watch rescans once at start, so it may also be used without
// LoadDir. Changes in nested subfolders of a plugin are not watched (they
// are picked up by the next event or Reload).
func (r *Registry) Watch(ctx context.Context, dir string) error {
	dir = filepath.Clean(dir)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("plugin: watching %s: %w", dir, err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("plugin: watching %s: %w", dir, err)
	}
	r.syncMu.Lock()
	if !slices.Contains(r.roots, dir) {
		r.roots = append(r.roots, dir)
	}
	r.syncMu.Unlock()
	watchSubdirs(w, dir)
	r.watchSettings(w)
	r.reloadLogged(ctx)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	b := &burst{quiet: r.debounce, limit: maxReloadDelay}
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) && filepath.Dir(ev.Name) == dir {
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
					_ = w.Add(ev.Name)
				}
			}
			timer.Reset(b.event(time.Now()))
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			r.log.Warn("plugin: file watch error; rescanning", "dir", dir, "error", err)
			timer.Reset(b.event(time.Now()))
		case <-timer.C:
			b.rescanned()
			watchSubdirs(w, dir) // folders created between an event and its watch
			r.reloadLogged(ctx)
		}
	}
}

// watchSettings adds a watch on the folder of each of WatchFiles (a
// secret file is often replaced by a rename or a symlink swap in its
// folder, which a watch on the file itself would miss).
func (r *Registry) watchSettings(w *fsnotify.Watcher) {
	seen := map[string]bool{}
	for _, f := range r.opts.WatchFiles {
		d := filepath.Dir(filepath.Clean(f))
		if seen[d] {
			continue
		}
		seen[d] = true
		if err := w.Add(d); err != nil {
			r.log.Warn("plugin: cannot watch a secret file's folder; a rotated secret loads on the next reload", "dir", d, "error", err)
		}
	}
}

// watchSubdirs adds a watch on each folder directly in dir.
func watchSubdirs(w *fsnotify.Watcher, dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range ents {
		p := filepath.Join(dir, de.Name())
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			_ = w.Add(p)
		}
	}
}

// reloadLogged rescans; problems are already logged once by sync.
func (r *Registry) reloadLogged(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	_ = r.Reload(ctx)
}
