package plugin

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Cluster-wide plugins: a plugin folder published into a JetStream object
// store is served by every host of the cluster (see Mirror). One object per
// plugin, named after it, holding a tar archive of the files the plugin
// needs: plugin.yaml, its module and its signature files.
const (
	// PublishedBucket is the object store of published plugins.
	PublishedBucket = "skillhost_plugins"
	// maxArchiveFiles caps the files of one published plugin.
	maxArchiveFiles = 16
	// archiveSlack is room beyond the module cap for the manifest,
	// signatures and tar headers.
	archiveSlack = MaxManifestBytes + 1<<20
)

// signatureFile reports whether a file beside the manifest is a signature
// that travels with the plugin.
func signatureFile(name string) bool {
	return strings.HasSuffix(name, ".sig") || strings.HasSuffix(name, ".jws")
}

// validObjectName is what a plugin name may be (the manifest's rule), so an
// object name is also a safe folder name.
var validObjectName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// PackedFile is one file of a plugin folder as it travels: its slash-separated
// path inside the folder and its bytes.
type PackedFile struct {
	Name string
	Data []byte
}

// MaxPackedFiles caps the files of one plugin folder that travels
// (published, or pushed to an OCI registry).
const MaxPackedFiles = maxArchiveFiles

// IsSignatureFile reports whether a file beside the manifest is a signature
// that travels with the plugin (*.sig, *.jws).
func IsSignatureFile(name string) bool { return signatureFile(name) }

// PackFiles validates the plugin folder dir as the host would load it
// (strict manifest, module present, pinned digest matching, within
// maxModule bytes) and returns its manifest and the files that travel:
// plugin.yaml first, then the module, then any *.sig / *.jws file beside
// the manifest.
func PackFiles(dir string, maxModule int64) (*Manifest, []PackedFile, error) {
	m, err := LoadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	names := []string{ManifestFile, filepath.ToSlash(filepath.Clean(m.Wasm))}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, de := range ents {
		if de.Type().IsRegular() && signatureFile(de.Name()) && !slices.Contains(names, de.Name()) {
			names = append(names, de.Name())
		}
	}
	if len(names) > maxArchiveFiles {
		return nil, nil, fmt.Errorf("%s: %d files to publish, over the %d cap", dir, len(names), maxArchiveFiles)
	}
	files := make([]PackedFile, 0, len(names))
	for _, name := range names {
		limit := int64(MaxManifestBytes)
		if name != ManifestFile {
			limit = maxModule
		}
		data, err := ReadInDir(dir, filepath.FromSlash(name), limit)
		if err != nil {
			return nil, nil, &FieldError{File: m.File, Field: "wasm", Msg: err.Error()}
		}
		if name == names[1] && m.SHA256 != "" {
			if got := digestOf(data); got != m.SHA256 {
				return nil, nil, &FieldError{File: m.File, Field: "sha256", Msg: fmt.Sprintf("%s has SHA-256 %s, the manifest pins %s", m.Wasm, got, m.SHA256)}
			}
		}
		files = append(files, PackedFile{Name: name, Data: data})
	}
	return m, files, nil
}

// Pack is PackFiles as a tar archive of those files, with the plugin's name.
func Pack(dir string, maxModule int64) (string, []byte, error) {
	m, files, err := PackFiles(dir, maxModule)
	if err != nil {
		return "", nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.Name, Mode: 0o644, Size: int64(len(f.Data)), Typeflag: tar.TypeReg}); err != nil {
			return "", nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return "", nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return "", nil, err
	}
	return m.Name, buf.Bytes(), nil
}

// errArchive marks unpack's refusals of the archive itself.
var errArchive = errors.New("archive")

// unpack extracts a published plugin's archive into dir (which must not
// exist): regular files with local names only, at most maxArchiveFiles, in
// all at most limit bytes. Anything else is refused.
func unpack(archive io.Reader, dir string, limit int64) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(io.LimitReader(archive, limit+1))
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errArchive, err)
		}
		name := path.Clean(h.Name)
		switch {
		case n >= maxArchiveFiles:
			return fmt.Errorf("%w: more than %d files", errArchive, maxArchiveFiles)
		case h.Typeflag != tar.TypeReg:
			return fmt.Errorf("%w: %s is not a regular file", errArchive, h.Name)
		case !filepath.IsLocal(filepath.FromSlash(name)) || strings.HasPrefix(name, "."):
			return fmt.Errorf("%w: %q is not a plain relative name", errArchive, h.Name)
		case total+h.Size > limit:
			return fmt.Errorf("%w: over the %s cap", errArchive, config.ByteSize(limit))
		}
		total += h.Size
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
				return err
			}
		}
		f, err := root.OpenFile(filepath.FromSlash(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(tr, h.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// Publish puts the plugin folder dir into the object store (replacing an
// earlier publication of the same plugin) and returns the plugin's name.
// Every host watching the store loads it.
func Publish(ctx context.Context, obj *store.Objects, dir string, maxModule int64) (string, error) {
	name, archive, err := Pack(dir, maxModule)
	if err != nil {
		return "", err
	}
	if err := obj.Put(ctx, name, "skillhost plugin "+name, bytes.NewReader(archive)); err != nil {
		return "", fmt.Errorf("publish %s: %w", name, err)
	}
	return name, nil
}

// Unpublish deletes the published plugin name; every host unloads it.
// ErrNotPublished when there is none.
func Unpublish(ctx context.Context, obj *store.Objects, name string) error {
	if !validObjectName.MatchString(name) {
		return fmt.Errorf("unpublish: %q is not a plugin name", name)
	}
	_, err := obj.Info(ctx, name)
	if err == nil {
		err = obj.Delete(ctx, name)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNotPublished, name)
		}
		return fmt.Errorf("unpublish %s: %w", name, err)
	}
	return nil
}

// ErrNotPublished is returned by Unpublish for a plugin that is not published.
var ErrNotPublished = errors.New("plugin is not published")

// digestOf is the lowercase hex SHA-256 of data.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
