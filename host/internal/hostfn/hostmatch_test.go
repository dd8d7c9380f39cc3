package hostfn

import (
	"fmt"
	"testing"
)

func TestHostMatcher(t *testing.T) {
	t.Parallel()
	m, bad := newHostMatcher([]string{"api.example.com", "*.Example.org.", "127.0.0.1", "[::1]", "*", "a.*.com", "exämple.com",
		"alt.example.com:8443", "*.ports.example:9000", "10.1.2.3:8080", "[fd00::1]:8080", "x.example:0", "x.example:65536", "x.example:08"})
	if len(bad) != 6 {
		t.Fatalf("bad patterns = %v, want the 6 invalid ones refused", bad)
	}
	tests := []struct {
		host string
		port uint16
		want bool
	}{
		{"api.example.com", 443, true},
		{"api.example.com", 80, true},
		{"api.example.com", 8080, false}, // no port in the entry: 80 and 443 only
		{"API.EXAMPLE.COM.", 443, true},
		{"example.com", 443, false},
		{"x.api.example.com", 443, false}, // exact entries do not cover subdomains
		{"a.example.org", 443, true},
		{"a.b.example.org", 80, true},
		{"a.example.org", 22, false},
		{"example.org", 443, false},    // the wildcard needs a label below the suffix
		{"badexample.org", 443, false}, // label boundary
		{"example.org.evil", 443, false},
		{"127.0.0.1", 80, true},
		{"::1", 443, true},
		{"[::1]", 443, true},
		{"::ffff:127.0.0.1", 80, true}, // mapped form of an allowed IPv4 address
		{"127.0.0.2", 80, false},
		{"evil.com", 443, false},
		{"alt.example.com", 8443, true},
		{"alt.example.com", 443, false}, // a port entry allows that port only
		{"a.ports.example", 9000, true},
		{"a.ports.example", 443, false},
		{"10.1.2.3", 8080, true},
		{"10.1.2.3", 80, false},
		{"fd00::1", 8080, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s:%d", tt.host, tt.port), func(t *testing.T) {
			t.Parallel()
			h, err := normalizeHost(tt.host)
			got := err == nil && m.allows(h, tt.port)
			if got != tt.want {
				t.Errorf("allows(%q, %d) = %v (normalised %q, err %v), want %v", tt.host, tt.port, got, h, err, tt.want)
			}
		})
	}
}

func TestValidateHostPattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		valid   bool
	}{
		{"example.com", true},
		{"*.example.com", true},
		{"xn--exmple-cua.com", true},
		{"10.0.0.1", true},
		{"::1", true},
		{"*", false},
		{"*.", false},
		{"", false},
		{"*.*.example.com", false},
		{"a.*.example.com", false},
		{"exämple.com", false},
		{"*.10.0.0.1", false},
		{"a..b", false},
		{"host:80", true},
		{"*.example.com:8443", true},
		{"[::1]:8080", true},
		{"10.0.0.1:65535", true},
		{"host:0", false},
		{"host:65536", false},
		{"host:+80", false},
		{"host:", false},
		{"host:http", false},
		{"host:80:80", false},
		{"user@host", false},
		{"a/b", false},
		{"fe80::1%eth0", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			err := ValidateHostPattern(tt.pattern)
			if (err == nil) != tt.valid {
				t.Errorf("ValidateHostPattern(%q) = %v, want valid=%v", tt.pattern, err, tt.valid)
			}
		})
	}
}
