package oci_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/skillhost/skillhost/host/internal/oci"
	"github.com/skillhost/skillhost/host/internal/ocitest"
)

// folderFiles maps each file under dir (slash paths) to its content.
func folderFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(mustRead(t, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A folder pushed comes back identical, by tag and by digest; the digest is
// the content's (pushing again gives the same one); other files in the
// folder do not travel.
func TestPushPull(t *testing.T) {
	t.Parallel()
	reg := ocitest.Start(t)
	src := writePlugin(t, filepath.Join(t.TempDir(), "echo"), "echo", "1.2.0", "build/echo.wasm")
	mustWrite(t, filepath.Join(src, "plugin.sig"), []byte(`{"payload":"x","signatures":[]}`))
	mustWrite(t, filepath.Join(src, "notes.txt"), []byte("stays home"))
	ref := reg.Host + "/team/echo:1.2.0"
	opts := oci.Options{PlainHTTP: true}
	pushed, err := oci.Push(testCtx(t), src, ref, opts)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if pushed.Name != "echo" || pushed.Version != "1.2.0" || !strings.HasPrefix(pushed.Digest, "sha256:") || pushed.Ref != ref {
		t.Errorf("Push = %+v", pushed)
	}
	again, err := oci.Push(testCtx(t), src, "oci://"+ref, opts)
	if err != nil || again.Digest != pushed.Digest {
		t.Errorf("second Push = %+v, %v; want the same digest %s", again, err, pushed.Digest)
	}
	want := folderFiles(t, src)
	delete(want, "notes.txt")
	for _, from := range []string{ref, reg.Host + "/team/echo@" + pushed.Digest} {
		dir := filepath.Join(t.TempDir(), "pulled")
		got, err := oci.Pull(testCtx(t), from, dir, opts)
		if err != nil {
			t.Fatalf("Pull(%s): %v", from, err)
		}
		if got.Digest != pushed.Digest || got.Name != "echo" || got.Version != "1.2.0" {
			t.Errorf("Pull(%s) = %+v, want digest %s", from, got, pushed.Digest)
		}
		if diff := cmp.Diff(want, folderFiles(t, dir)); diff != "" {
			t.Errorf("Pull(%s) folder (-pushed +pulled):\n%s", from, diff)
		}
	}
}

func TestPushPullRefusals(t *testing.T) {
	t.Parallel()
	reg := ocitest.Start(t)
	src := writePlugin(t, filepath.Join(t.TempDir(), "echo"), "echo", "1.0.0", "echo.wasm")
	opts := oci.Options{PlainHTTP: true}
	if _, err := oci.Push(testCtx(t), src, reg.Host+"/team/echo@sha256:"+strings.Repeat("ab", 32), opts); err == nil {
		t.Error("Push to a digest succeeded")
	}
	broken := filepath.Join(t.TempDir(), "broken")
	mustWrite(t, filepath.Join(broken, "plugin.yaml"), []byte("name: Broken\n"))
	if _, err := oci.Push(testCtx(t), broken, reg.Host+"/team/broken:1", opts); err == nil || !strings.Contains(err.Error(), "plugin.yaml") {
		t.Errorf("Push of an invalid folder = %v, want the manifest's problem", err)
	}
	if _, err := oci.Push(testCtx(t), src, reg.Host+"/team/echo:1", opts); err != nil {
		t.Fatal(err)
	}
	full := t.TempDir()
	mustWrite(t, filepath.Join(full, "keep"), []byte("x"))
	gets := reg.BlobGets.Load()
	if _, err := oci.Pull(testCtx(t), reg.Host+"/team/echo:1", full, opts); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Pull into a non-empty folder = %v", err)
	}
	if _, err := oci.Pull(testCtx(t), reg.Host+"/team/missing:1", filepath.Join(t.TempDir(), "m"), opts); err == nil {
		t.Error("Pull of a missing reference succeeded")
	}
	if n := reg.BlobGets.Load() - gets; n != 0 {
		t.Errorf("refused pulls fetched %d blobs", n)
	}
}

// A registry is untrusted: whatever it stores or answers, Pull refuses an
// artifact that is not a plugin within the caps, before reading the layer
// that breaks them, and writes nothing outside the folder.
func TestPullRefusesHostileRegistry(t *testing.T) {
	t.Parallel()
	var tamper struct{ path, body string }
	reg := ocitest.Start(t, ocitest.Wrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && tamper.path != "" && strings.HasSuffix(r.URL.Path, tamper.path) {
				w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
				_, _ = w.Write([]byte(tamper.body))
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	base := pluginLayers(t, "evil")
	with := func(extra ...layer) []layer { return append(append([]layer{}, base...), extra...) }
	module := func(title string) []layer {
		return []layer{base[0], {mediaType: oci.MediaTypeModule, title: title, data: base[1].data}}
	}
	tests := []struct {
		name   string
		layers []layer
		mutate func(*ocispec.Manifest)
		want   string
	}{
		{"wrong artifact type", base, func(m *ocispec.Manifest) { m.ArtifactType = "application/vnd.example.other" }, "artifact type"},
		{"no artifact type (an image)", base, func(m *ocispec.Manifest) { m.ArtifactType = "" }, "artifact type"},
		{"an index", base, func(m *ocispec.Manifest) { m.MediaType = ocispec.MediaTypeImageIndex }, "not an OCI image manifest"},
		{"config of an image", base, func(m *ocispec.Manifest) { m.Config.MediaType = ocispec.MediaTypeImageConfig }, "config media type"},
		{"unknown layer type", with(layer{mediaType: "application/x-sh", title: "run.sh", data: []byte("rm -rf /")}), nil, "media type"},
		{"oversize module", module("plugin.wasm"), func(m *ocispec.Manifest) { m.Layers[1].Size = 65<<20 + 1 }, "over the 64MiB cap"},
		{"oversize manifest layer", base, func(m *ocispec.Manifest) { m.Layers[0].Size = 2 << 20 }, "over the 1MiB cap"},
		{"oversize signature", with(layer{mediaType: oci.MediaTypeSignature, title: "plugin.sig", data: []byte("{}"), size: 1 << 20, skipPush: true}), nil, "over the 256KiB cap"},
		{"negative size", base, func(m *ocispec.Manifest) { m.Layers[1].Size = -1 }, "declares -1 bytes"},
		{"traversal title", module("../../evil.wasm"), nil, "not a plain relative path"},
		{"absolute title", module("/tmp/evil.wasm"), nil, "not a plain relative path"},
		{"hidden title", module("sub/.oci.json"), nil, "starting with a dot"},
		{"backslash title", module(`..\evil.wasm`), nil, "not a plain relative path"},
		{"untitled layer", module(""), nil, "no title"},
		{"manifest layer renamed", []layer{{mediaType: oci.MediaTypeManifest, title: "other.yaml", data: base[0].data}, base[1]}, nil, "not plugin.yaml"},
		{"signature in a subfolder", with(layer{mediaType: oci.MediaTypeSignature, title: "sub/plugin.sig", data: []byte("{}")}), nil, "beside the manifest"},
		{"two modules", with(layer{mediaType: oci.MediaTypeModule, title: "other.wasm", data: []byte("x")}), nil, "1 manifest and 2 module layers"},
		{"duplicate title", with(layer{mediaType: oci.MediaTypeSignature, title: "a.sig", data: []byte("1")}, layer{mediaType: oci.MediaTypeSignature, title: "a.sig", data: []byte("2")}), nil, "two layers"},
		{"too many layers", with(manySigs(15)...), nil, "17 layers"},
		{"manifest names another module", module("other.wasm"), nil, "which no layer holds"},
		{"layer longer than declared", base, func(m *ocispec.Manifest) { m.Layers[1].Size-- }, "mismatch Content-Length"},
		{"layer shorter than declared", base, func(m *ocispec.Manifest) { m.Layers[1].Size++ }, "mismatch Content-Length"},
		{"digest not sha256", base, func(m *ocispec.Manifest) { m.Layers[1].Digest = "md5:0123" }, "not sha256"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reg.Host + "/hostile/p" + string(rune('a'+i)) + ":1"
			pushCrafted(t, ref, tt.layers, tt.mutate)
			parent := t.TempDir()
			dir := filepath.Join(parent, "out", "plugin")
			mustWrite(t, filepath.Join(parent, "out", "marker"), nil)
			_, err := oci.Pull(testCtx(t), ref, dir, oci.Options{PlainHTTP: true})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Pull error = %v, want it to contain %q", err, tt.want)
			}
			if diff := cmp.Diff(map[string]string{"out/marker": ""}, folderFiles(t, parent)); diff != "" {
				t.Errorf("files after the refused pull (-want +got):\n%s", diff)
			}
		})
	}
	// Caps are checked before a layer is read: the oversize module was
	// never fetched (the registry counts blob GETs).
	t.Run("caps before reading", func(t *testing.T) {
		ref := reg.Host + "/hostile/big:1"
		pushCrafted(t, ref, module("plugin.wasm"), func(m *ocispec.Manifest) { m.Layers[1].Size = 1 << 40 })
		before := reg.BlobGets.Load()
		if _, err := oci.Pull(testCtx(t), ref, filepath.Join(t.TempDir(), "p"), oci.Options{PlainHTTP: true}); !errors.Is(err, oci.ErrNotPlugin) {
			t.Fatalf("Pull = %v, want ErrNotPlugin", err)
		}
		if n := reg.BlobGets.Load() - before; n != 0 {
			t.Errorf("%d blobs fetched for a refused artifact", n)
		}
	})
	// A registry that answers a huge manifest is cut off at the cap; one
	// whose manifest does not hash to the digest asked for is refused.
	t.Run("lying registry", func(t *testing.T) {
		digest := pushCrafted(t, reg.Host+"/hostile/liar:1", base, nil)
		tamper.path, tamper.body = "/hostile/liar/manifests/1", `{"schemaVersion":2,`+strings.Repeat(" ", oci.MaxManifestBytes)+`}`
		if _, err := oci.Pull(testCtx(t), reg.Host+"/hostile/liar:1", filepath.Join(t.TempDir(), "p"), oci.Options{PlainHTTP: true}); err == nil {
			t.Error("Pull of an oversize manifest succeeded")
		}
		tamper.path, tamper.body = "/hostile/liar/manifests/"+digest, `{"schemaVersion":2,"mediaType":"`+ocispec.MediaTypeImageManifest+`"}`
		_, err := oci.Pull(testCtx(t), reg.Host+"/hostile/liar@"+digest, filepath.Join(t.TempDir(), "p"), oci.Options{PlainHTTP: true})
		if err == nil || !strings.Contains(err.Error(), "digest") {
			t.Errorf("Pull of a manifest not matching its digest = %v", err)
		}
		// A layer whose bytes are not those of its digest (same length).
		wasm := base[1].data
		tamper.path, tamper.body = "/blobs/"+digestOf(wasm), strings.Repeat("\x00", len(wasm))
		_, err = oci.Pull(testCtx(t), reg.Host+"/hostile/liar@"+digest, filepath.Join(t.TempDir(), "p"), oci.Options{PlainHTTP: true})
		if err == nil || !strings.Contains(err.Error(), "mismatched digest") {
			t.Errorf("Pull of a tampered layer = %v", err)
		}
		tamper.path = ""
	})
}

func digestOf(data []byte) string {
	return content.NewDescriptorFromBytes("", data).Digest.String()
}

func manySigs(n int) []layer {
	out := make([]layer, n)
	for i := range out {
		out[i] = layer{mediaType: oci.MediaTypeSignature, title: "s" + string(rune('a'+i)) + ".sig", data: []byte{byte(i)}}
	}
	return out
}

// Credentials come from the flags or the docker config file; without them a
// registry that wants them refuses.
func TestAuth(t *testing.T) {
	t.Parallel()
	reg := ocitest.Start(t, ocitest.BasicAuth("alice", "s3cret"))
	src := writePlugin(t, filepath.Join(t.TempDir(), "echo"), "echo", "1.0.0", "echo.wasm")
	ref := reg.Host + "/team/echo:1"
	none := filepath.Join(t.TempDir(), "missing.json")
	if _, err := oci.Push(testCtx(t), src, ref, oci.Options{PlainHTTP: true, DockerConfig: none}); err == nil {
		t.Fatal("anonymous Push to a registry wanting credentials succeeded")
	}
	if _, err := oci.Push(testCtx(t), src, ref, oci.Options{PlainHTTP: true, Username: "alice", Password: "wrong", DockerConfig: none}); err == nil {
		t.Fatal("Push with a wrong password succeeded")
	}
	if _, err := oci.Push(testCtx(t), src, ref, oci.Options{PlainHTTP: true, Username: "alice", Password: "s3cret", DockerConfig: none}); err != nil {
		t.Fatalf("Push with the flags' credentials: %v", err)
	}
	dockerConfig := filepath.Join(t.TempDir(), "config.json")
	mustWrite(t, dockerConfig, []byte(`{"auths":{"`+reg.Host+`":{"auth":"`+base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))+`"}}}`))
	if _, err := oci.Pull(testCtx(t), ref, filepath.Join(t.TempDir(), "p"), oci.Options{PlainHTTP: true, DockerConfig: dockerConfig}); err != nil {
		t.Fatalf("Pull with the docker config's credentials: %v", err)
	}
}
