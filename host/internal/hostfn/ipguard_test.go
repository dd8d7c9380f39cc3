package hostfn

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"8.8.8.8":              "",
		"1.1.1.1":              "",
		"2606:4700::1111":      "",
		"127.0.0.1":            "loopback",
		"127.255.255.254":      "loopback",
		"::1":                  "loopback",
		"::ffff:127.0.0.1":     "loopback",
		"::ffff:10.1.2.3":      "private",
		"10.0.0.1":             "private",
		"172.16.0.1":           "private",
		"172.31.255.255":       "private",
		"172.32.0.1":           "",
		"192.168.1.1":          "private",
		"169.254.169.254":      "cloud metadata",
		"fd00:ec2::254":        "cloud metadata",
		"169.254.1.1":          "link-local",
		"fe80::1":              "link-local",
		"100.64.0.1":           "carrier-grade NAT",
		"100.127.255.255":      "carrier-grade NAT",
		"100.128.0.1":          "",
		"0.0.0.0":              "this-network",
		"::":                   "unspecified",
		"224.0.0.1":            "multicast",
		"ff02::1":              "multicast",
		"255.255.255.255":      "reserved",
		"fc00::1":              "unique-local (private)",
		"64:ff9b::a00:1":       "NAT64",
		"2002:a00:1::1":        "6to4",
		"::127.0.0.1":          "IPv4-compatible",
		"192.0.2.1":            "documentation",
		"fe80::1%eth0":         "link-local",
		"198.18.0.1":           "benchmarking",
		"2001:db8::1":          "documentation",
		"2001:0:4136:e378::1":  "Teredo",
		"fec0::1":              "site-local",
		"100::1":               "discard",
		"192.0.0.170":          "IETF protocol assignments",
		"203.0.113.9":          "documentation",
		"198.51.100.7":         "documentation",
		"240.0.0.1":            "reserved",
		"2a00:1450:4001::200e": "",
	}
	got := map[string]string{}
	for s := range tests {
		got[s] = classify(netip.MustParseAddr(s))
	}
	if diff := cmp.Diff(tests, got); diff != "" {
		t.Errorf("classify mismatch (-want +got):\n%s", diff)
	}
}

func TestDialGuardControl(t *testing.T) {
	t.Parallel()
	allowLoopback := dialGuard{allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	tests := []struct {
		name    string
		guard   dialGuard
		network string
		address string
		refused bool // a *refusedAddrError
		failed  bool // any error
	}{
		{"public", dialGuard{}, "tcp4", "93.184.216.34:443", false, false},
		{"loopback refused", dialGuard{}, "tcp4", "127.0.0.1:8080", true, true},
		{"loopback allowed", allowLoopback, "tcp4", "127.0.0.1:8080", false, false},
		{"mapped loopback allowed", allowLoopback, "tcp6", "[::ffff:127.0.0.1]:80", false, false},
		{"ipv6 loopback still refused", allowLoopback, "tcp6", "[::1]:80", true, true},
		{"private", allowLoopback, "tcp4", "10.0.0.1:80", true, true},
		{"metadata", allowLoopback, "tcp4", "169.254.169.254:80", true, true},
		{"metadata v6", dialGuard{}, "tcp6", "[fd00:ec2::254]:80", true, true},
		{"udp", dialGuard{}, "udp4", "8.8.8.8:53", false, true},
		{"garbage", dialGuard{}, "tcp", "nonsense", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.guard.control(t.Context(), tt.network, tt.address, nil)
			var refused *refusedAddrError
			if got := errors.As(err, &refused); got != tt.refused {
				t.Errorf("control(%s, %s) = %v; refused %v, want %v", tt.network, tt.address, err, got, tt.refused)
			}
			if (err != nil) != tt.failed {
				t.Errorf("control(%s, %s) = %v, want error %v", tt.network, tt.address, err, tt.failed)
			}
		})
	}
}
