package share

import (
	"net"
	"net/netip"
)

// AddrHolder is the holder of a client's connections for a per-address
// share: its IP address, or for IPv6 its /64 (what one client is usually
// given). A non-TCP address is its string.
func AddrHolder(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return a.String()
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
