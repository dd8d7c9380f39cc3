package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/skillhost/skillhost/host/internal/plugin"
)

// Result is a plugin pushed or pulled.
type Result struct {
	Name    string // the manifest's name
	Version string // the manifest's version
	// Ref is the reference used, tag or digest as given (push: with the
	// tag, "latest" when none was given).
	Ref string
	// Digest is the OCI manifest's digest ("sha256:<hex>"): pin it with
	// REF@DIGEST.
	Digest string
}

// Push validates the plugin folder dir as the host would load it and pushes
// it to ref (registry/repository[:tag], default tag "latest"), replacing
// what the tag named. The same folder always gives the same digest.
func Push(ctx context.Context, dir, ref string, o Options) (Result, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return Result{}, err
	}
	if _, err := r.Digest(); err == nil {
		return Result{}, fmt.Errorf("push to %s: give a tag, not a digest (the digest is the content's)", ref)
	}
	if r.Reference == "" {
		r.Reference = "latest"
	}
	m, files, err := plugin.PackFiles(dir, o.limits().module)
	if err != nil {
		return Result{}, err
	}
	repo, err := o.repository(r)
	if err != nil {
		return Result{}, err
	}
	if err := pushBlob(ctx, repo, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data); err != nil {
		return Result{}, err
	}
	man := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType, Config: ocispec.DescriptorEmptyJSON, Layers: make([]ocispec.Descriptor, 0, len(files)),
		Annotations: map[string]string{ocispec.AnnotationTitle: m.Name, ocispec.AnnotationVersion: m.Version},
	}
	man.Config.Data = nil // the blob is pushed; the descriptor need not embed it
	module := files[1].Name
	for _, f := range files {
		desc := content.NewDescriptorFromBytes(mediaTypeOf(f.Name, module), f.Data)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: f.Name}
		if err := pushBlob(ctx, repo, desc, f.Data); err != nil {
			return Result{}, err
		}
		man.Layers = append(man.Layers, desc)
	}
	raw, err := json.Marshal(man)
	if err != nil {
		return Result{}, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	if err := repo.PushReference(ctx, desc, bytes.NewReader(raw), r.Reference); err != nil {
		return Result{}, fmt.Errorf("push %s: %w", r, err)
	}
	return Result{Name: m.Name, Version: m.Version, Ref: r.String(), Digest: desc.Digest.String()}, nil
}

// pushBlob uploads data unless the registry has it already.
func pushBlob(ctx context.Context, repo interface {
	content.Pusher
	content.ReadOnlyStorage
}, desc ocispec.Descriptor, data []byte) error {
	desc.Data = nil
	ok, err := repo.Exists(ctx, desc)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	if ok {
		return nil
	}
	if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("push %s: %w", desc.Digest, err)
	}
	return nil
}
