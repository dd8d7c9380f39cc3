package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is wrapped by the error of a plugin file (manifest, module,
// signature, a published mirror's files) that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// openRegular is how the host opens every file it reads from a plugin
// folder, a published mirror or a guest mount: inside root (os.Root: no
// symlink out of it), and only a regular file (a directory too when dirs
// is set). It stats the name first, which opens nothing, and refuses
// anything else; it then opens with O_NONBLOCK, so a FIFO swapped in after
// the stat cannot block open(2) (opening a FIFO for reading blocks until a
// writer comes, and nothing can interrupt that call: loading stalled, later
// plugins never loaded and SIGTERM could not end the host), and checks the
// opened file again (fstat). O_NONBLOCK changes nothing for regular files
// and directories.
func openRegular(root *os.Root, name string, dirs bool) (*os.File, error) {
	st, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(name, st.Mode(), dirs); err != nil {
		return nil, err
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err == nil {
		err = checkRegular(name, st.Mode(), dirs)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// checkRegular refuses a mode other than a regular file (or a directory
// when dirs is set), naming what it is.
func checkRegular(name string, mode fs.FileMode, dirs bool) error {
	if mode.IsRegular() || (dirs && mode.IsDir()) {
		return nil
	}
	what := "a " + mode.Type().String()
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	case mode.IsDir():
		what = "a directory"
	}
	return &notRegularError{name: name, what: what}
}

// notRegularError is ErrNotRegular for one file.
type notRegularError struct{ name, what string }

func (e *notRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file: refused (the host reads only regular files)", e.name, e.what)
}

func (e *notRegularError) Is(target error) bool { return target == ErrNotRegular }

// regularFS is a guest mount over root: openRegular for every name, so a
// guest opening (or stat-ing: wazero stats by opening) a FIFO, socket or
// device in its mount gets EACCES at once instead of blocking the host
// thread that runs it past the call's deadline.
type regularFS struct{ root *os.Root }

// Open implements fs.FS.
func (r regularFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := openRegular(r.root, filepath.FromSlash(name), true)
	if errors.Is(err, ErrNotRegular) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}
