package host

import (
	"context"

	"github.com/skillhost/skillhost/host/internal/oci"
)

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
