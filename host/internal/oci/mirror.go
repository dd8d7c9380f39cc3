package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/registry"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// MarkerFile, inside a pulled plugin folder, records what was pulled
// (reference, manifest digest, time), so an unchanged artifact is not
// pulled again and a restart knows the revision it serves.
const MarkerFile = ".oci.json"

// PullTimeout bounds one pull (resolve, manifest, layers).
const PullTimeout = 2 * time.Minute

// Source is one sources.oci entry.
type Source = config.OCISource

// State is one source as it stands: what it serves and how its last pull
// went.
type State struct {
	Ref string
	// Dir is the folder the plugin is pulled into.
	Dir string
	// Digest is the manifest digest of the revision on disk ("" before a
	// first pull succeeded).
	Digest   string
	PulledAt time.Time
	// CheckedAt is when the registry last answered.
	CheckedAt time.Time
	// Error is why the last pull failed ("" when it succeeded); ErrorSince
	// is when the failures began.
	Error      string
	ErrorSince time.Time
}

type marker struct {
	Ref      string    `json:"ref"`
	Digest   string    `json:"digest"`
	PulledAt time.Time `json:"pulled_at"`
}

// Mirror keeps the plugins of sources.oci pulled, one folder each under
// a directory the registry loads like the plugin folder: same validation,
// signature trust, policy and hot-reload rules (a revision that fails to
// load leaves the old one serving). A pull that fails leaves the last
// revision on disk serving, also across restarts. Each host pulls on its
// own.
type Mirror struct {
	reg     *plugin.Registry
	dir     string
	staging string
	opts    Options
	log     *slog.Logger
	srcs    []*source
}

type source struct {
	Source
	ref    registry.Reference
	folder string

	mu    sync.Mutex
	state State
}

// NewMirror mirrors srcs into dir for reg; o gives the credentials and the
// module cap (opts.PlainHTTP is per source).
func NewMirror(reg *plugin.Registry, dir string, srcs []Source, o Options, log *slog.Logger) (*Mirror, error) {
	dir = filepath.Clean(dir)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mirror{reg: reg, dir: dir, staging: dir + ".staging", opts: o, log: log}
	for i, s := range srcs {
		r, err := ParseRef(s.Ref)
		if err != nil {
			return nil, fmt.Errorf("config sources.oci[%d].ref: %w", i, err)
		}
		folder := filepath.Join(dir, folderName(r.String()))
		m.srcs = append(m.srcs, &source{Source: s, ref: r, folder: folder, state: State{Ref: s.Ref, Dir: folder}})
	}
	return m, nil
}

// Dir is the folder the sources are pulled into.
func (m *Mirror) Dir() string { return m.dir }

// Sync pulls every source once (concurrently, each within PullTimeout),
// removes the folders of sources no longer configured and loads the
// folder into the registry (adding it to those Reload rescans). A source
// whose pull fails serves what it pulled before, if anything.
func (m *Mirror) Sync(ctx context.Context) error {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return fmt.Errorf("oci sources: %w", err)
	}
	if err := os.RemoveAll(m.staging); err != nil {
		return fmt.Errorf("oci sources: %w", err)
	}
	if err := os.MkdirAll(m.staging, 0o700); err != nil {
		return fmt.Errorf("oci sources: %w", err)
	}
	m.prune()
	var g errgroup.Group
	for _, s := range m.srcs {
		s.readMarker()
		g.Go(func() error { m.update(ctx, s); return nil })
	}
	_ = g.Wait()
	return m.reg.LoadDir(ctx, m.dir)
}

// Run polls the sources with a poll interval until ctx ends; when a tag
// moved, its new revision is pulled and the registry reloaded. Call Sync
// first.
func (m *Mirror) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range m.srcs {
		if s.Poll <= 0 {
			continue
		}
		wg.Go(func() {
			t := time.NewTicker(s.Poll)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if m.update(ctx, s) && ctx.Err() == nil {
						_ = m.reg.Reload(ctx) // load problems are logged and kept in the snapshot
					}
				}
			}
		})
	}
	wg.Wait()
}

// States are the sources as they stand, in config order.
func (m *Mirror) States() []State {
	out := make([]State, 0, len(m.srcs))
	for _, s := range m.srcs {
		s.mu.Lock()
		out = append(out, s.state)
		s.mu.Unlock()
	}
	return out
}

// update pulls s when its reference names another revision than the one on
// disk; it reports whether the folder changed. A failure is recorded and
// logged once.
func (m *Mirror) update(ctx context.Context, s *source) bool {
	ctx, cancel := context.WithTimeout(ctx, PullTimeout)
	defer cancel()
	s.mu.Lock()
	have := s.state.Digest
	s.mu.Unlock()
	if want, err := s.ref.Digest(); err == nil && want.String() == have {
		return false // pinned and on disk: the registry is not asked
	}
	o := m.opts
	o.PlainHTTP = s.PlainHTTP
	res, changed, err := m.pull(ctx, s, o, have)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.state.Error != err.Error() {
			if s.state.Error == "" {
				s.state.ErrorSince = now
			}
			if have != "" {
				m.log.Error("oci: pull failed; the pulled revision keeps serving", "ref", s.Ref, "digest", have, "error", err)
			} else {
				m.log.Error("oci: pull failed; nothing pulled yet to serve", "ref", s.Ref, "error", err)
			}
		}
		s.state.Error = err.Error()
		return false
	}
	if s.state.Error != "" {
		m.log.Info("oci: pulls succeed again", "ref", s.Ref, "was", s.state.Error)
	}
	s.state.Error, s.state.ErrorSince, s.state.CheckedAt = "", time.Time{}, now
	if changed {
		s.state.Digest, s.state.PulledAt = res.Digest, now
		m.log.Info("oci: pulled", "ref", s.Ref, "digest", res.Digest, "plugin", res.Name, "version", res.Version, "dir", s.folder)
	}
	return changed
}

// pull resolves s and, when it names another digest than have, fetches
// that digest and swaps the folder.
func (m *Mirror) pull(ctx context.Context, s *source, o Options, have string) (Result, bool, error) {
	repo, err := o.repository(s.ref)
	if err != nil {
		return Result{}, false, err
	}
	desc, err := repo.Resolve(ctx, s.ref.Reference)
	if err != nil {
		return Result{}, false, err
	}
	if desc.Digest.String() == have {
		return Result{}, false, nil
	}
	art, err := fetch(ctx, repo, desc.Digest.String(), o.limits())
	if err != nil {
		return Result{}, false, err
	}
	mf, err := m.swap(s, art)
	if err != nil {
		return Result{}, false, err
	}
	return Result{Name: mf.Name, Version: mf.Version, Ref: s.Ref, Digest: art.digest.String()}, true, nil
}

// swap writes art beside s's folder and renames it into place.
func (m *Mirror) swap(s *source, art *artifact) (*plugin.Manifest, error) {
	tmp, err := os.MkdirTemp(m.staging, filepath.Base(s.folder)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	stage := filepath.Join(tmp, "plugin")
	mf, err := writeFolder(stage, art.files)
	if err != nil {
		return nil, err
	}
	mk, err := json.Marshal(marker{Ref: s.Ref, Digest: art.digest.String(), PulledAt: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(stage, MarkerFile), mk, 0o644); err != nil {
		return nil, err
	}
	if exchange(stage, s.folder) == nil {
		return mf, nil // the old revision is in stage now, removed with tmp
	}
	old := filepath.Join(tmp, "old")
	if err := os.Rename(s.folder, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.Rename(stage, s.folder); err != nil {
		_ = os.Rename(old, s.folder)
		return nil, err
	}
	return mf, nil
}

// readMarker restores what s's folder holds from its marker.
func (s *source) readMarker() {
	data, err := plugin.ReadInDir(s.folder, MarkerFile, 4096)
	if err != nil {
		return
	}
	var mk marker
	if json.Unmarshal(data, &mk) != nil || digest.Digest(mk.Digest).Validate() != nil {
		return
	}
	s.mu.Lock()
	s.state.Digest, s.state.PulledAt = mk.Digest, mk.PulledAt
	s.mu.Unlock()
}

// prune removes the folders of sources no longer configured.
func (m *Mirror) prune() {
	keep := map[string]bool{}
	for _, s := range m.srcs {
		keep[filepath.Base(s.folder)] = true
	}
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return
	}
	for _, de := range ents {
		if !keep[de.Name()] {
			if err := os.RemoveAll(filepath.Join(m.dir, de.Name())); err == nil {
				m.log.Info("oci: source no longer configured; its plugin is removed", "dir", filepath.Join(m.dir, de.Name()))
			}
		}
	}
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// folderName is a readable, collision-free folder name for a reference.
func folderName(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	name := unsafeChars.ReplaceAllString(ref, "-")
	if len(name) > 48 {
		name = name[:48]
	}
	return name + "-" + hex.EncodeToString(sum[:5])
}
