package oci

import "golang.org/x/sys/unix"

// exchange swaps the folders a and b in one step (renameat2
// RENAME_EXCHANGE), so a rescan of the registry never finds the plugin's
// folder missing; an error means it was not done.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
