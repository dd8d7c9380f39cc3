package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// artifact is a plugin artifact read from a registry, every byte verified.
type artifact struct {
	digest digest.Digest
	files  []plugin.PackedFile
}

// ErrNotPlugin marks an artifact that is not a skillhost plugin.
var ErrNotPlugin = errors.New("not a skillhost plugin artifact")

// fetch reads the plugin artifact reference (a tag or a digest) names:
// the manifest (capped at MaxManifestBytes before it is read, its digest
// verified, and when reference is a digest, that one), then each layer
// (its size checked against its cap before it is read, its digest
// verified).
func fetch(ctx context.Context, repo *remote.Repository, reference string, lim limits) (*artifact, error) {
	desc, rc, err := repo.FetchReference(ctx, reference)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if desc.Size > MaxManifestBytes {
		return nil, fmt.Errorf("%w: manifest of %d bytes, over the %s cap", ErrNotPlugin, desc.Size, config.ByteSize(MaxManifestBytes))
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("%w: the registry serves %.100q, not an OCI image manifest", ErrNotPlugin, desc.MediaType)
	}
	if want, err := digest.Parse(reference); err == nil && desc.Digest != want {
		return nil, fmt.Errorf("the registry answered %s for %s", desc.Digest, want)
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrNotPlugin, err)
	}
	layers, err := checkManifest(&man, lim)
	if err != nil {
		return nil, err
	}
	art := &artifact{digest: desc.Digest, files: make([]plugin.PackedFile, 0, len(layers))}
	for _, l := range layers {
		data, err := fetchBlob(ctx, repo, l)
		if err != nil {
			return nil, fmt.Errorf("layer %.80q: %w", l.Annotations[ocispec.AnnotationTitle], err)
		}
		art.files = append(art.files, plugin.PackedFile{Name: l.Annotations[ocispec.AnnotationTitle], Data: data})
	}
	return art, nil
}

// checkManifest refuses a manifest that is not a plugin artifact within
// the caps and returns its layers.
func checkManifest(man *ocispec.Manifest, lim limits) ([]ocispec.Descriptor, error) {
	switch {
	case man.SchemaVersion != 2 || man.MediaType != ocispec.MediaTypeImageManifest:
		return nil, fmt.Errorf("%w: manifest schema %d, media type %.100q", ErrNotPlugin, man.SchemaVersion, man.MediaType)
	case man.ArtifactType != ArtifactType:
		return nil, fmt.Errorf("%w: artifact type %.100q, want %s (push it with skillhost plugin push)", ErrNotPlugin, man.ArtifactType, ArtifactType)
	case man.Config.MediaType != ocispec.MediaTypeEmptyJSON:
		return nil, fmt.Errorf("%w: config media type %.100q, want %s", ErrNotPlugin, man.Config.MediaType, ocispec.MediaTypeEmptyJSON)
	case len(man.Layers) == 0 || len(man.Layers) > plugin.MaxPackedFiles:
		return nil, fmt.Errorf("%w: %d layers; a plugin has 2 to %d", ErrNotPlugin, len(man.Layers), plugin.MaxPackedFiles)
	}
	var (
		total int64
		seen  = map[string]bool{}
		kinds = map[string]int{}
	)
	for _, l := range man.Layers {
		title := l.Annotations[ocispec.AnnotationTitle]
		limit, ok := lim.layerCap(l.MediaType)
		if !ok {
			return nil, fmt.Errorf("%w: layer %.80q has media type %.100q", ErrNotPlugin, title, l.MediaType)
		}
		if err := checkTitle(title, l.MediaType); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotPlugin, err)
		}
		if seen[title] {
			return nil, fmt.Errorf("%w: two layers are titled %.80q", ErrNotPlugin, title)
		}
		seen[title] = true
		if l.Size < 0 || l.Size > limit {
			return nil, fmt.Errorf("%w: %v", ErrNotPlugin, sizeError(title, l.MediaType, l.Size, limit))
		}
		if total += l.Size; total > lim.total() {
			return nil, fmt.Errorf("%w: layers over %s together", ErrNotPlugin, config.ByteSize(lim.total()))
		}
		if err := l.Digest.Validate(); err != nil || l.Digest.Algorithm() != digest.SHA256 {
			return nil, fmt.Errorf("%w: layer %.80q: digest %.100q is not sha256:<hex>", ErrNotPlugin, title, l.Digest)
		}
		kinds[l.MediaType]++
	}
	if kinds[MediaTypeManifest] != 1 || kinds[MediaTypeModule] != 1 {
		return nil, fmt.Errorf("%w: %d manifest and %d module layers; a plugin has one of each", ErrNotPlugin,
			kinds[MediaTypeManifest], kinds[MediaTypeModule])
	}
	return man.Layers, nil
}

// fetchBlob reads one layer, exactly its declared size and digest.
func fetchBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor) ([]byte, error) {
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return content.ReadAll(io.LimitReader(rc, desc.Size+1), desc)
}

// writeFolder writes files into dir (which must not exist) through an
// os.Root (no file lands outside it, whatever its name) and checks the
// result is a plugin folder whose manifest names the module layer.
func writeFolder(dir string, files []plugin.PackedFile) (*plugin.Manifest, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, f := range files {
		name := filepath.FromSlash(f.Name)
		if d := path.Dir(f.Name); d != "." {
			if err := root.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
				return nil, err
			}
		}
		w, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = w.Write(f.Data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	m, err := plugin.LoadManifest(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.Name == path.Clean(filepath.ToSlash(m.Wasm)) {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: plugin.yaml names the module %s, which no layer holds", ErrNotPlugin, m.Wasm)
}

// Pull fetches the plugin ref names (a tag or a digest) and writes it into
// dir, which must not exist or be empty: into a temporary folder beside it
// first, renamed into place once every file is written and the manifest
// decodes. It does not load the plugin: `plugin validate` or a host does.
func Pull(ctx context.Context, ref, dir string, o Options) (Result, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return Result{}, err
	}
	if r.Reference == "" {
		return Result{}, fmt.Errorf("pull %s: give a tag or a digest", ref)
	}
	dir = filepath.Clean(dir)
	if err := usableDir(dir); err != nil {
		return Result{}, err
	}
	repo, err := o.repository(r)
	if err != nil {
		return Result{}, err
	}
	art, err := fetch(ctx, repo, r.Reference, o.limits())
	if err != nil {
		return Result{}, fmt.Errorf("pull %s: %w", r, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".pull-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmp)
	stage := filepath.Join(tmp, "plugin")
	m, err := writeFolder(stage, art.files)
	if err != nil {
		return Result{}, fmt.Errorf("pull %s: %w", r, err)
	}
	_ = os.Remove(dir) // empty (usableDir); a concurrent writer makes Rename fail
	if err := os.Rename(stage, dir); err != nil {
		return Result{}, fmt.Errorf("pull %s: %w", r, err)
	}
	return Result{Name: m.Name, Version: m.Version, Ref: r.String(), Digest: art.digest.String()}, nil
}

// usableDir refuses a dir that exists and is not an empty folder.
func usableDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is not a folder", dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s is not empty (pull into a new folder)", dir)
	}
	return nil
}
