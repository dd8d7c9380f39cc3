package oci_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/skillhost/skillhost/host/internal/oci"
)

// fixture is a committed sandbox test module (exports echo).
const fixture = "../sandbox/testdata/hostile.wasm"

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writePlugin writes a plugin folder dir (manifest name/version, the
// fixture module at wasm) and returns dir.
func writePlugin(t *testing.T, dir, name, version, wasm string) string {
	t.Helper()
	mustWrite(t, filepath.Join(dir, filepath.FromSlash(wasm)), mustRead(t, fixture))
	mustWrite(t, filepath.Join(dir, "plugin.yaml"), []byte("name: "+name+"\nversion: "+version+
		"\ndescription: test plugin\nwasm: "+wasm+"\nskills:\n  - {id: "+name+"-echo, description: echoes, function: echo}\n"))
	return dir
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rawRepo is a plain client of the registry, to store what no honest
// pusher would (the registry stores and serves any manifest).
func rawRepo(t *testing.T, ref string) *remote.Repository {
	t.Helper()
	r, err := registry.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	return &remote.Repository{Reference: r, PlainHTTP: true}
}

// layer is one blob of a crafted artifact.
type layer struct {
	mediaType, title string
	data             []byte
	size             int64 // declared size; 0 = len(data)
	skipPush         bool  // declare it without uploading it
}

// pushCrafted stores a manifest with layers under ref's tag; mutate edits
// the manifest before it is stored. It returns the manifest's digest.
func pushCrafted(t *testing.T, ref string, layers []layer, mutate func(*ocispec.Manifest)) string {
	t.Helper()
	ctx := testCtx(t)
	repo := rawRepo(t, ref)
	empty := ocispec.DescriptorEmptyJSON
	if err := repo.Push(ctx, ocispec.Descriptor{MediaType: empty.MediaType, Digest: empty.Digest, Size: empty.Size}, bytes.NewReader(empty.Data)); err != nil {
		t.Fatal(err)
	}
	man := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: oci.ArtifactType, Config: ocispec.Descriptor{MediaType: empty.MediaType, Digest: empty.Digest, Size: empty.Size}}
	for _, l := range layers {
		desc := content.NewDescriptorFromBytes(l.mediaType, l.data)
		if !l.skipPush {
			if err := repo.Push(ctx, desc, bytes.NewReader(l.data)); err != nil {
				t.Fatal(err)
			}
		}
		if l.size != 0 {
			desc.Size = l.size
		}
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: l.title}
		man.Layers = append(man.Layers, desc)
	}
	if mutate != nil {
		mutate(&man)
	}
	raw, err := json.Marshal(man)
	if err != nil {
		t.Fatal(err)
	}
	mt := man.MediaType
	if mt == "" {
		mt = ocispec.MediaTypeImageManifest
	}
	desc := content.NewDescriptorFromBytes(mt, raw)
	if err := repo.PushReference(ctx, desc, bytes.NewReader(raw), repo.Reference.Reference); err != nil {
		t.Fatal(err)
	}
	return desc.Digest.String()
}

// pluginLayers are the layers of an honest plugin artifact (module at
// plugin.wasm).
func pluginLayers(t *testing.T, name string) []layer {
	t.Helper()
	yaml := []byte("name: " + name + "\nversion: 1.0.0\ndescription: test plugin\nwasm: plugin.wasm\nskills:\n  - {id: e, description: echoes, function: echo}\n")
	return []layer{
		{mediaType: oci.MediaTypeManifest, title: "plugin.yaml", data: yaml},
		{mediaType: oci.MediaTypeModule, title: "plugin.wasm", data: mustRead(t, fixture)},
	}
}
