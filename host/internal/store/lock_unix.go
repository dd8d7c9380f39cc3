//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive, non-blocking flock on dir/LOCK so two
// processes never run JetStream on the same files (nats-server does not
// guard against it, and the result is corruption). The kernel releases the
// lock when the process dies, even by kill -9.
func lockDir(dir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("store: data dir %s is in use by another process (another skillhost on the same --data folder? stop it, or give this host its own --data; with make: make run DATA=other)", dir)
		}
		return nil, fmt.Errorf("store: lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing the descriptor drops the lock
}
