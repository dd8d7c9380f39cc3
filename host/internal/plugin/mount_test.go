package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/config"
)

// mountScene is an allowed prefix holding inside/ (file.txt = "inside")
// and a symlink link -> inside, and outside/ (file.txt = "SECRET") next to
// the prefix.
type mountScene struct{ allowed, inside, outside, link string }

func newMountScene(t *testing.T) mountScene {
	t.Helper()
	base := t.TempDir()
	s := mountScene{allowed: filepath.Join(base, "allowed"), outside: filepath.Join(base, "outside")}
	s.inside, s.link = filepath.Join(s.allowed, "inside"), filepath.Join(s.allowed, "link")
	for _, d := range []string{s.inside, s.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(s.inside, "file.txt"), "inside")
	mustWrite(t, filepath.Join(s.outside, "file.txt"), "SECRET")
	mustSymlink(t, s.inside, s.link)
	return s
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestMountSymlinkSwappedAfterCheck: the allowed-prefix check resolves a
// mount's symlinks; the mount is opened later (after the module is hashed
// and inspected). The test hook changes the file system in that window,
// deterministically, and the plugin must never get the outside directory.
// Not parallel: it sets the package's hook.
func TestMountSymlinkSwappedAfterCheck(t *testing.T) {
	tests := []struct {
		name string
		swap func(t *testing.T, s mountScene)
		want string // the load error; "" = loads, mounting inside/
	}{
		{"the granted symlink now points outside", func(t *testing.T, s mountScene) {
			if err := os.Remove(s.link); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, s.outside, s.link)
		}, ""},
		{"the resolved directory is now a symlink to outside", func(t *testing.T, s mountScene) {
			if err := os.Rename(s.inside, s.inside+".old"); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, s.outside, s.inside)
		}, ": path escapes from parent (it must stay inside the allowed prefix "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newMountScene(t)
			swaps := 0
			beforeMountOpen = func(string) { swaps++; tt.swap(t, s) }
			t.Cleanup(func() { beforeMountOpen = func(string) {} })

			root := t.TempDir()
			dir := pluginSpec{name: "m", extra: "permissions: {allowed_paths: {/data: '" + s.link + "'}}"}.write(t, root)
			r := newTestRegistry(t, config.Policy{AllowedPathPrefixes: []string{s.allowed}})
			err := r.LoadDir(context.Background(), root)
			if swaps != 1 {
				t.Fatalf("the hook ran %d times, want once", swaps)
			}
			if e := r.cur.byDir[dir]; e != nil {
				for _, c := range e.closers {
					if b, err := c.(*os.Root).ReadFile("file.txt"); err != nil || string(b) != "inside" {
						t.Fatalf("the mount shows file.txt = %q, %v; want the directory checked (inside)", b, err)
					}
				}
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("LoadDir: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadDir error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestOpenMountFollowsSymlinksInsideThePrefix: a symlink that stays inside
// the prefix is followed, and the prefix itself may be mounted.
func TestOpenMountFollowsSymlinksInsideThePrefix(t *testing.T) {
	t.Parallel()
	s := newMountScene(t)
	for host, name := range map[string]string{s.link: "file.txt", s.inside: "file.txt", s.allowed: "inside/file.txt"} {
		root, err := newPolicy(config.Policy{AllowedPathPrefixes: []string{s.allowed}}).openMount(host)
		if err != nil {
			t.Fatalf("openMount(%s): %v", host, err)
		}
		if b, err := root.ReadFile(name); err != nil || string(b) != "inside" {
			t.Errorf("openMount(%s): read %s = %q, %v", host, name, b, err)
		}
		root.Close()
	}
	if _, err := newPolicy(config.Policy{AllowedPathPrefixes: []string{s.inside}}).openMount(s.outside); err == nil {
		t.Error("openMount outside every prefix succeeded")
	}
}
