package plugin

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// archiveOf builds a tar archive from headers (a nil body writes Size zero
// bytes).
func archiveOf(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A published archive is untrusted: unpack refuses anything but a few plain
// files of bounded size, and writes nothing outside its folder.
func TestUnpackRefusesHostileArchives(t *testing.T) {
	t.Parallel()
	many := make([]*tar.Header, maxArchiveFiles+1)
	for i := range many {
		many[i] = &tar.Header{Name: "f" + strings.Repeat("a", i+1), Size: 1}
	}
	tests := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"parent path", archiveOf(t, &tar.Header{Name: "../escape", Size: 1}), "not a plain relative name"},
		{"absolute path", archiveOf(t, &tar.Header{Name: "/etc/escape", Size: 1}), "not a plain relative name"},
		{"hidden marker overwrite", archiveOf(t, &tar.Header{Name: markerFile, Size: 1}), "not a plain relative name"},
		{"symlink", archiveOf(t, &tar.Header{Name: "link", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}), "not a regular file"},
		{"directory entry", archiveOf(t, &tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}), "not a regular file"},
		{"too many files", archiveOf(t, many...), "more than"},
		{"over the byte cap", archiveOf(t, &tar.Header{Name: "big.wasm", Size: 128 << 10}), "cap"},
		{"duplicate name", archiveOf(t, &tar.Header{Name: "a", Size: 1}, &tar.Header{Name: "a", Size: 1}), "exists"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			err := unpack(bytes.NewReader(tc.archive), filepath.Join(parent, "p"), 64<<10)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("unpack = %v, want an error containing %q", err, tc.want)
			}
			if _, err := os.Lstat(filepath.Join(parent, "escape")); err == nil {
				t.Fatal("a file was written outside the plugin folder")
			}
		})
	}
}
