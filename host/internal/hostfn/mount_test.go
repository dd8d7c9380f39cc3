package hostfn

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mustTree creates dir/name files with contents.
func mustTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMountFSConfinesSymlinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	mustTree(t, root, map[string]string{"data/in.txt": "inside"})
	mustTree(t, outside, map[string]string{"secret.txt": "outside"})
	links := map[string]string{
		"passwd":       "/etc/passwd",
		"secret":       filepath.Join(outside, "secret.txt"),
		"up":           "../" + filepath.Base(outside) + "/secret.txt",
		"outdir":       outside,
		"inner":        "data/in.txt", // stays inside: allowed
		"data/sibling": "../data/in.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := MountFS("/data", root)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want string // "" = must fail
	}{
		{"data/in.txt", "inside"},
		{"inner", "inside"},
		{"data/sibling", "inside"},
		{"passwd", ""},
		{"secret", ""},
		{"up", ""},
		{"outdir/secret.txt", ""},
		{"../" + filepath.Base(outside) + "/secret.txt", ""},
		{"/etc/passwd", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := fs.ReadFile(fsys, tt.name)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("read %q through the mount = %q: escaped the root", tt.name, b)
				}
				return
			}
			if err != nil || string(b) != tt.want {
				t.Fatalf("read %q = %q, %v; want %q", tt.name, b, err, tt.want)
			}
		})
	}
	t.Run("directory listing does not follow escapes", func(t *testing.T) {
		t.Parallel()
		if _, err := fs.ReadDir(fsys, "outdir"); err == nil {
			t.Error("listed a directory outside the root")
		}
	})
}

func TestMounts(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	mustTree(t, a, map[string]string{"x": "a"})
	mustTree(t, b, map[string]string{"x": "b"})
	file := filepath.Join(a, "x")
	mounts, err := Mounts(map[string]string{"/b": b, "/a": a + ":ro"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range mounts {
		body, err := fs.ReadFile(m.FS, "x")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.GuestPath+"="+string(body))
	}
	if diff := cmp.Diff([]string{"/a=a", "/b=b"}, got); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}

	refused := []struct {
		name    string
		allowed map[string]string
		msg     string
	}{
		{"read-write", map[string]string{"/a": a + ":rw"}, "read-write"},
		{"relative guest path", map[string]string{"a": a}, "absolute"},
		{"unclean guest path", map[string]string{"/a/../b": a}, "clean"},
		{"relative host path", map[string]string{"/a": "data"}, "absolute"},
		{"missing host path", map[string]string{"/a": filepath.Join(a, "nope")}, "no such file"},
		{"file, not directory", map[string]string{"/a": file}, "not a directory"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Mounts(tt.allowed)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Mounts(%v) = %v, want an error mentioning %q", tt.allowed, err, tt.msg)
			}
		})
	}
}
