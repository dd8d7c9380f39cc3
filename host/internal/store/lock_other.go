//go:build !unix

package store

// lockDir is a no-op where flock is unavailable; do not share a data dir.
func lockDir(string) (func(), error) { return func() {}, nil }
