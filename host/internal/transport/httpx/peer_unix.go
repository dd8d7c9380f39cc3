//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package httpx

import (
	"net"
	"syscall"
	"time"
)

// watchPeer calls gone when the peer of conn closes it (or resets it) while
// the server is not reading from it, i.e. while a request is being handled.
// It polls the socket for readability through the runtime's poller and
// peeks (MSG_PEEK: nothing is consumed): end of stream means the client is
// gone; data (a pipelined request, or TLS records it cannot interpret)
// ends the watch without a verdict. stop ends the watch and waits for it;
// the connection's read deadline is cleared, as the server sets its own
// before every read. Connections without a file descriptor are not watched.
func watchPeer(conn net.Conn, gone func()) (stop func()) {
	sock := socket(conn)
	sc, ok := sock.(syscall.Conn)
	if !ok {
		return func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil || sock.SetReadDeadline(time.Time{}) != nil {
		return func() {}
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		closed := false
		var b [1]byte
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
				switch {
				case err == syscall.EINTR:
					continue
				case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
					return false // nothing yet: wait until readable
				case err != nil || n == 0:
					closed = true // reset, or end of stream
				}
				return true
			}
		})
		if err == nil && closed {
			gone()
		}
	}()
	return func() {
		_ = sock.SetReadDeadline(time.Now()) // wakes rc.Read
		<-exited
		_ = sock.SetReadDeadline(time.Time{})
	}
}
