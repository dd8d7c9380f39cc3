package assemble

import (
	"context"
	"path/filepath"

	"github.com/skillhost/skillhost/host/internal/admin"
	"github.com/skillhost/skillhost/host/internal/oci"
)

// ociDir is where a host pulls the plugins of sources.oci, under its data
// directory: one folder per source, kept across restarts.
const ociDir = "plugins-oci"

// provisionOCI serves the plugins of sources.oci: each is pulled into
// <data>/plugins-oci (a failed pull keeps the revision on disk, so a host
// whose registry is down starts with what it pulled last) and loaded after
// the local folder with the same validation, trust and policy; sources with
// a poll interval are re-resolved and pulled again when their tag moved.
func (h *Root) provisionOCI(ctx context.Context) error {
	if len(h.cfg.Sources.OCI) == 0 {
		return nil
	}
	m, err := oci.NewMirror(h.Registry, filepath.Join(h.cfg.Data, ociDir), h.cfg.Sources.OCI,
		oci.Options{MaxModuleBytes: int64(h.cfg.Policy.MaxModuleBytes), UserAgent: "skillhost/" + h.version}, h.log)
	if err != nil {
		return err
	}
	h.oci = m
	h.log.Info("pulling plugins from OCI registries", "sources", len(h.cfg.Sources.OCI), "dir", m.Dir())
	if err := m.Sync(ctx); err != nil {
		h.log.Error("some plugins from OCI registries failed to load; the others are served", "err", err)
	}
	h.background("oci", m.Run)
	return nil
}

// ociStates are the sources as the admin documents show them.
func (h *Root) ociStates() []admin.SourceState {
	if h.oci == nil {
		return nil
	}
	states := h.oci.States()
	out := make([]admin.SourceState, 0, len(states))
	for _, s := range states {
		out = append(out, admin.SourceState{Ref: s.Ref, Dir: s.Dir, Digest: s.Digest, PulledAt: s.PulledAt,
			Error: s.Error, ErrorSince: s.ErrorSince})
	}
	return out
}
