package sandbox

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestReadOnlyFSHidesWriters: wazero writes through any mounted file that
// implements io.Writer or io.WriterAt; the wrapper must expose neither.
func TestReadOnlyFSHidesWriters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := readOnlyFS{os.DirFS(dir)}.Open("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(io.Writer); ok {
		t.Error("mounted file implements io.Writer")
	}
	if _, ok := f.(io.WriterAt); ok {
		t.Error("mounted file implements io.WriterAt")
	}
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "data" {
		t.Errorf("read %q, %v", b, err)
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"abcd", "abc…"},
		{"ééé", "é…"}, // 6 bytes cut at 3 backs off to a rune boundary
	}
	for _, tt := range tests {
		if got := truncate(tt.in, 3); got != tt.want {
			t.Errorf("truncate(%q, 3) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
