package hostfn

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// MountFS opens hostPath as a read-only fs.FS for the guest path guestPath.
// The FS is an os.Root: no name, symlink or ".." can reach outside hostPath
// (a symlink inside the mount pointing at /etc/passwd fails to open).
// hostPath must be an absolute directory; a ":rw" suffix (a read-write grant)
// is refused: skillhost only offers read-only mounts.
func MountFS(guestPath, hostPath string) (fs.FS, error) {
	if strings.HasSuffix(hostPath, ":rw") {
		return nil, fmt.Errorf("allowed_paths %q: read-write (\":rw\") mounts are not supported; only read-only mounts are", guestPath)
	}
	hostPath = strings.TrimSuffix(hostPath, ":ro")
	if !path.IsAbs(guestPath) || path.Clean(guestPath) != guestPath {
		return nil, fmt.Errorf("allowed_paths %q: the guest path must be absolute and clean", guestPath)
	}
	if !filepath.IsAbs(hostPath) {
		return nil, fmt.Errorf("allowed_paths %q: host path %q must be absolute", guestPath, hostPath)
	}
	st, err := os.Stat(hostPath)
	if err != nil {
		return nil, fmt.Errorf("allowed_paths %q: %w", guestPath, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("allowed_paths %q: host path %q is not a directory", guestPath, hostPath)
	}
	root, err := os.OpenRoot(hostPath)
	if err != nil {
		return nil, fmt.Errorf("allowed_paths %q: %w", guestPath, err)
	}
	return root.FS(), nil
}

// Mounts builds the read-only mounts of a permissions.allowed_paths map
// (guest path → absolute host path), sorted by guest path. Any invalid entry
// fails the whole set.
func Mounts(allowed map[string]string) ([]sandbox.Mount, error) {
	guests := make([]string, 0, len(allowed))
	for g := range allowed {
		guests = append(guests, g)
	}
	sort.Strings(guests)
	mounts := make([]sandbox.Mount, 0, len(guests))
	for _, g := range guests {
		fsys, err := MountFS(g, allowed[g])
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, sandbox.Mount{GuestPath: g, FS: fsys})
	}
	return mounts, nil
}
