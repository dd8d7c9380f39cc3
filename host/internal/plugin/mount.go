package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// resolveMount finds the allowed prefix that holds host once symlinks are
// resolved, and returns that prefix (resolved) and host's path relative to
// it. It only decides; openMount opens.
func (p policy) resolveMount(host string) (prefix, rel string, err error) {
	real, err := filepath.EvalSymlinks(host)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", "", fmt.Errorf("host path %s: %w", host, err)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return "", "", fmt.Errorf("host path %s is not a directory", host)
	}
	for _, pre := range p.AllowedPathPrefixes {
		if r, err := filepath.EvalSymlinks(pre); err == nil {
			pre = r
		}
		rel, err := filepath.Rel(pre, real)
		if err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return pre, rel, nil
		}
	}
	return "", "", fmt.Errorf("host path %s is outside the operator's allowed prefixes (policy.allowed_path_prefixes)", host)
}

// beforeMountOpen runs in openMount between resolving a mount and opening
// it; tests use it to change the file system in that window.
var beforeMountOpen = func(host string) {}

// openMount opens host as a mount root. It resolves host again (the
// policy check ran earlier, before the module was hashed and inspected, so
// a symlink may have been swapped since), then opens the allowed prefix
// that holds it and host through it by its resolved relative path
// (openat-style, os.Root): a component swapped for a symlink after this
// resolution cannot lead the mount out of the prefix either, since os.Root
// refuses any path that resolves outside it. The opened root is what the
// guest gets; nothing reopens host by name later.
func (p policy) openMount(host string) (*os.Root, error) {
	prefix, rel, err := p.resolveMount(host)
	if err != nil {
		return nil, err
	}
	beforeMountOpen(host)
	pr, err := os.OpenRoot(prefix)
	if err != nil {
		return nil, fmt.Errorf("host path %s: opening its allowed prefix: %w", host, err)
	}
	defer pr.Close()
	root, err := pr.OpenRoot(rel)
	if err != nil {
		return nil, fmt.Errorf("host path %s: %w (it must stay inside the allowed prefix %s)", host, unwrapPath(err), prefix)
	}
	if st, err := root.Stat("."); err != nil || !st.IsDir() {
		_ = root.Close()
		return nil, fmt.Errorf("host path %s is not a directory", host)
	}
	return root, nil
}

// unwrapPath drops the *os.PathError wrapper (its path is relative to the
// prefix, which the message already names).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
