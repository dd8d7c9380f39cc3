package share_test

import (
	"net"
	"testing"

	"github.com/skillhost/skillhost/host/internal/share"
)

// A client's connections are counted by its address; an IPv6 client by its
// /64, which one client usually holds whole.
func TestAddrHolder(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ ip, want string }{
		{"127.0.0.2", "127.0.0.2"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"},
		{"::1", "::/64"},
	} {
		if got := share.AddrHolder(&net.TCPAddr{IP: net.ParseIP(tt.ip), Port: 1}); got != tt.want {
			t.Errorf("AddrHolder(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}
