package host

import (
	"context"
	"path/filepath"

	"github.com/skillhost/skillhost/host/internal/admin"
	"github.com/skillhost/skillhost/host/internal/oci"
)

// ociDir is where a host pulls the plugins of sources.oci, under its data
// directory: one folder per source, kept across restarts.
const ociDir = "plugins-oci"

// setupOCI serves the plugins of sources.oci: each is pulled into
// <data>/plugins-oci (a failed pull keeps the revision on disk, so a host
// whose registry is down starts with what it pulled last) and loaded after
// the local folder with the same validation, trust and policy; sources with
// a poll interval are re-resolved and pulled again when their tag moved.
func (h *Host) setupOCI(ctx context.Context) error {
	if len(h.cfg.Sources.OCI) == 0 {
		return nil
	}
	m, err := oci.NewMirror(h.registry, filepath.Join(h.cfg.Data, ociDir), h.cfg.Sources.OCI,
		oci.Options{MaxModuleBytes: int64(h.cfg.Policy.MaxModuleBytes), UserAgent: "skillhost/" + h.opts.Version}, h.log)
	if err != nil {
		return err
	}
	h.oci = m
	h.log.Info("pulling plugins from OCI registries", "sources", len(h.cfg.Sources.OCI), "dir", m.Dir())
	if err := m.Sync(ctx); err != nil {
		h.log.Error("some plugins from OCI registries failed to load; the others are served", "err", err)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		m.Run(h.bg)
	}()
	return nil
}

// ociStates are the sources as the admin documents show them.
func (h *Host) ociStates() []admin.SourceState {
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

// OCIOptions configure PushPlugin and PullPlugin.
type OCIOptions struct {
	// PlainHTTP talks to the registry over plain HTTP (a local registry).
	// Optional. Default: HTTPS.
	PlainHTTP bool
	// Username and Password authenticate; they win over the docker config
	// file. Optional. Default: the docker config file's credentials.
	Username, Password string
	// DockerConfig is the docker config file read for credentials.
	// Optional. Default: $DOCKER_CONFIG/config.json, else
	// ~/.docker/config.json (missing: anonymous).
	DockerConfig string
	// MaxModuleBytes caps the module. Optional. Default: the default
	// policy's (64 MiB).
	MaxModuleBytes int64
}

func (o OCIOptions) internal() oci.Options {
	return oci.Options{PlainHTTP: o.PlainHTTP, Username: o.Username, Password: o.Password,
		DockerConfig: o.DockerConfig, MaxModuleBytes: o.MaxModuleBytes}
}

// OCIResult is a plugin pushed to or pulled from a registry.
type OCIResult struct {
	Name, Version string
	// Ref is the reference used (push: with its tag, "latest" by default).
	Ref string
	// Digest is the artifact's manifest digest: pin it as REF@DIGEST.
	Digest string
}

// PushPlugin validates the plugin folder dir and pushes it to the
// registry reference ref (registry/repository[:tag]) as a skillhost plugin
// artifact; the same folder always gives the same digest.
func PushPlugin(ctx context.Context, dir, ref string, opts OCIOptions) (OCIResult, error) {
	r, err := oci.Push(ctx, dir, ref, opts.internal())
	return OCIResult(r), err
}

// PullPlugin fetches the plugin artifact ref (a tag or a digest) into dir,
// which must not exist or be empty; it refuses anything that is not a
// skillhost plugin within the caps of a plugin folder.
func PullPlugin(ctx context.Context, ref, dir string, opts OCIOptions) (OCIResult, error) {
	r, err := oci.Pull(ctx, ref, dir, opts.internal())
	return OCIResult(r), err
}
