package oci

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// The media types of a plugin artifact.
const (
	// ArtifactType is the manifest's artifactType.
	ArtifactType = "application/vnd.skillhost.plugin.v1+json"
	// MediaTypeManifest is the layer holding plugin.yaml.
	MediaTypeManifest = "application/vnd.skillhost.plugin.manifest.v1+yaml"
	// MediaTypeModule is the layer holding the WebAssembly module.
	MediaTypeModule = "application/vnd.skillhost.plugin.module.v1+wasm"
	// MediaTypeSignature is a layer holding a signature file (plugin.sig,
	// *.jws).
	MediaTypeSignature = "application/vnd.skillhost.plugin.signature.v1+jws"
)

// Caps on what a registry may answer, beyond those of a plugin folder.
const (
	// MaxManifestBytes caps the OCI manifest (16 layers need ~6 KiB).
	MaxManifestBytes = 64 << 10
	// maxTitle caps a layer title's bytes.
	maxTitle = 255
)

// limits are the caps of one artifact, from those of a plugin folder.
type limits struct {
	module int64 // the module layer: policy.max_module_bytes
}

// layerCap is the largest size a layer of mediaType may have; ok is false
// for a media type that is not part of a plugin artifact.
func (l limits) layerCap(mediaType string) (n int64, ok bool) {
	switch mediaType {
	case MediaTypeManifest:
		return plugin.MaxManifestBytes, true
	case MediaTypeModule:
		return l.module, true
	case MediaTypeSignature:
		return plugin.MaxSignatureBytes, true
	}
	return 0, false
}

// total is the most all layers together may hold.
func (l limits) total() int64 {
	return plugin.MaxManifestBytes + l.module + plugin.MaxPackedFiles*plugin.MaxSignatureBytes
}

// mediaTypeOf is the media type of a file that travels with a plugin.
func mediaTypeOf(name, module string) string {
	switch {
	case name == plugin.ManifestFile:
		return MediaTypeManifest
	case name == module:
		return MediaTypeModule
	default:
		return MediaTypeSignature
	}
}

// checkTitle refuses a layer title that is not a plain relative path inside
// the plugin folder: absolute, with .. or any component starting with "."
// (hidden files, the mirror's marker), a backslash, NUL, or not clean.
// A signature must sit beside the manifest and be named *.sig or *.jws.
func checkTitle(title, mediaType string) error {
	switch {
	case title == "":
		return fmt.Errorf("a %s layer has no title annotation (its file name)", mediaType)
	case len(title) > maxTitle:
		return fmt.Errorf("layer title of %d bytes, over %d", len(title), maxTitle)
	case strings.ContainsAny(title, "\\\x00:") || path.IsAbs(title) || path.Clean(title) != title ||
		!filepath.IsLocal(filepath.FromSlash(title)):
		return fmt.Errorf("layer title %.80q is not a plain relative path", title)
	}
	for _, part := range strings.Split(title, "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Errorf("layer title %.80q has a component starting with a dot", title)
		}
	}
	switch mediaType {
	case MediaTypeManifest:
		if title != plugin.ManifestFile {
			return fmt.Errorf("the manifest layer is titled %.80q, not %s", title, plugin.ManifestFile)
		}
	case MediaTypeSignature:
		if strings.Contains(title, "/") || !plugin.IsSignatureFile(title) {
			return fmt.Errorf("signature layer title %.80q is not a *.sig or *.jws file beside the manifest", title)
		}
	}
	return nil
}

// sizeError is the refusal of a layer over its cap.
func sizeError(title, mediaType string, size, limit int64) error {
	return fmt.Errorf("layer %.80q (%s) declares %d bytes, over the %s cap", title, mediaType, size, config.ByteSize(limit))
}
