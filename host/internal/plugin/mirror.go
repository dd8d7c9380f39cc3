package plugin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/store"
)

// markerFile, inside a mirrored plugin folder, holds the digest of the
// object it was unpacked from, so an unchanged plugin is not unpacked again.
const markerFile = ".published"

// maxMarkerBytes bounds the marker read (a digest is ~60 bytes).
const maxMarkerBytes = 1 << 10

// Mirror serves the plugins published in an object store (see Publish): it
// unpacks each into its own folder under a directory the registry loads like
// any plugin folder — same validation, policy and hot-reload rules (a new
// revision that fails to load leaves the old one serving) — and removes the
// folder when the plugin is unpublished. Name collisions with the local
// plugin folder follow the registry's rule: the plugin loaded first keeps
// serving and the other is refused with a Problem naming both; the host loads
// its local folder first, so at start a local plugin wins.
type Mirror struct {
	reg     *Registry
	obj     *store.Objects
	dir     string // the folder the registry loads
	staging string // unpacking happens here, outside the registry's view
	limit   int64  // bytes of one archive
	log     *slog.Logger
	// retry holds the plugins whose last unpack failed for a reason that
	// may pass (the store did not answer, a full disk): Run tries them
	// again every retryEvery until they unpack or change. Only the
	// goroutine running Sync, then Run, uses it.
	retry      map[string]*store.ObjectInfo
	retryEvery time.Duration
}

// mirrorRetry is how often Run tries again a plugin that failed to unpack
// for a reason that may pass.
const mirrorRetry = 5 * time.Second

// NewMirror mirrors obj into dir (created if missing) for reg.
func NewMirror(reg *Registry, obj *store.Objects, dir string) *Mirror {
	dir = filepath.Clean(dir)
	return &Mirror{reg: reg, obj: obj, dir: dir, staging: dir + ".staging",
		limit: int64(reg.policy.MaxModuleBytes) + archiveSlack, log: reg.log,
		retry: map[string]*store.ObjectInfo{}, retryEvery: mirrorRetry}
}

// archiveError is an unpack failure of the archive itself (over the cap,
// malformed): trying the same object again cannot help.
type archiveError struct{ err error }

func (e archiveError) Error() string { return e.err.Error() }
func (e archiveError) Unwrap() error { return e.err }

// Dir is the folder the published plugins are unpacked into.
func (m *Mirror) Dir() string { return m.dir }

// Sync brings the folder in line with the store once and loads it into the
// registry (adding it to the folders Reload rescans). A plugin that cannot
// be unpacked is logged and skipped.
func (m *Mirror) Sync(ctx context.Context) error {
	if err := m.prepare(); err != nil {
		return err
	}
	infos, err := m.obj.List(ctx)
	if err != nil {
		return fmt.Errorf("published plugins: %w", err)
	}
	keep := map[string]bool{}
	for _, info := range infos {
		keep[info.Name] = true
		m.apply(ctx, &info)
	}
	m.prune(keep)
	return m.reg.LoadDir(ctx, m.dir)
}

// Run follows the store until ctx ends: every publication or deletion is
// applied and the registry reloaded. Call Sync first.
func (m *Mirror) Run(ctx context.Context) error {
	w, err := m.obj.Watch(ctx)
	if err != nil {
		return fmt.Errorf("published plugins: watch: %w", err)
	}
	defer w.Stop()
	tick := time.NewTicker(m.retryEvery)
	defer tick.Stop()
	// changed: the replay of the current state applied something Sync had
	// not (a plugin published between Sync and this watch); it is loaded
	// once the replay ends.
	initial, changed, keep := true, false, map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if !initial && m.retryFailed(ctx) {
				m.reload(ctx)
			}
		case info, ok := <-w.Updates():
			if !ok {
				return errors.New("published plugins: watch ended")
			}
			if info == nil { // the current state has been replayed
				initial = false
				if m.prune(keep) || changed {
					m.reload(ctx)
				}
				continue
			}
			if initial {
				keep[info.Name] = !info.Deleted
			}
			if m.apply(ctx, info) {
				if initial {
					changed = true
				} else {
					m.reload(ctx)
				}
			}
		}
	}
}

// retryFailed tries again the plugins of retry; it reports whether any
// folder changed.
func (m *Mirror) retryFailed(ctx context.Context) bool {
	changed := false
	for _, info := range maps.Clone(m.retry) {
		if m.apply(ctx, info) {
			changed = true
		}
	}
	return changed
}

func (m *Mirror) reload(ctx context.Context) {
	if ctx.Err() == nil {
		_ = m.reg.Reload(ctx) // problems are logged and kept in the snapshot
	}
}

func (m *Mirror) prepare() error {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return fmt.Errorf("published plugins: %w", err)
	}
	if err := os.RemoveAll(m.staging); err != nil {
		return fmt.Errorf("published plugins: %w", err)
	}
	return os.MkdirAll(m.staging, 0o700)
}

// apply makes the folder of one object match it; it reports whether the
// folder changed.
func (m *Mirror) apply(ctx context.Context, info *store.ObjectInfo) bool {
	name := info.Name
	_, retrying := m.retry[name]
	delete(m.retry, name) // a newer state of the object replaces a pending retry
	if !validObjectName.MatchString(name) {
		m.log.Warn("published plugins: object with an invalid plugin name ignored", "object", truncName(name))
		return false
	}
	dir := filepath.Join(m.dir, name)
	if info.Deleted {
		if _, err := os.Stat(dir); err != nil {
			return false
		}
		if err := os.RemoveAll(dir); err != nil {
			m.log.Error("published plugins: removing an unpublished plugin", "plugin", name, "err", err)
		}
		m.log.Info("published plugins: unpublished", "plugin", name)
		return true
	}
	if old, err := ReadInDir(dir, markerFile, maxMarkerBytes); err == nil && string(old) == info.Digest {
		return false
	}
	if err := m.unpackObject(ctx, info, dir); err != nil {
		var ae archiveError
		if !errors.As(err, &ae) && ctx.Err() == nil {
			m.retry[name] = info
			if !retrying {
				m.log.Error("published plugins: not unpacked; the previous revision, if any, keeps serving; trying again",
					"plugin", name, "every", m.retryEvery, "err", err)
			}
			return false
		}
		m.log.Error("published plugins: not unpacked; the previous revision, if any, keeps serving", "plugin", name, "err", err)
		return false
	}
	m.log.Info("published plugins: unpacked", "plugin", name, "bytes", info.Size)
	return true
}

// unpackObject reads the whole object (its digest is verified at the end)
// and swaps the unpacked folder in place of dir.
func (m *Mirror) unpackObject(ctx context.Context, info *store.ObjectInfo, dir string) error {
	if int64(info.Size) > m.limit {
		return archiveError{fmt.Errorf("%d bytes, over the %s cap", info.Size, config.ByteSize(m.limit))}
	}
	r, err := m.obj.Get(ctx, info.Name)
	if err != nil {
		return err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, m.limit+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > m.limit {
		return archiveError{fmt.Errorf("over the %s cap", config.ByteSize(m.limit))}
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails (Go 1.24+)
	tmp := filepath.Join(m.staging, info.Name+"-"+hex.EncodeToString(nonce[:]))
	if err := unpack(bytes.NewReader(data), tmp, m.limit); err != nil {
		_ = os.RemoveAll(tmp)
		if errors.Is(err, errArchive) {
			return archiveError{err}
		}
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, markerFile), []byte(info.Digest), 0o644); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.Rename(old, dir)
		_ = os.RemoveAll(tmp)
		return err
	}
	_ = os.RemoveAll(old)
	return nil
}

// prune removes folders of plugins no longer published; it reports whether
// any was removed.
func (m *Mirror) prune(keep map[string]bool) bool {
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return false
	}
	removed := false
	for _, de := range ents {
		if de.IsDir() && !keep[de.Name()] {
			if err := os.RemoveAll(filepath.Join(m.dir, de.Name())); err == nil {
				m.log.Info("published plugins: unpublished", "plugin", de.Name())
				removed = true
			}
		}
	}
	return removed
}

func truncName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
