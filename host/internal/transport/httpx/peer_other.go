//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package httpx

import "net"

// watchPeer does not watch on this platform: a request whose client goes
// away runs to its own deadline.
func watchPeer(net.Conn, func()) (stop func()) { return func() {} }
