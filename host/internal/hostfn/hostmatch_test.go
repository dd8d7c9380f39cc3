package hostfn

import (
	"testing"
)

func TestHostMatcher(t *testing.T) {
	t.Parallel()
	m, bad := newHostMatcher([]string{"api.example.com", "*.Example.org.", "127.0.0.1", "[::1]", "*", "a.*.com", "exämple.com"})
	if len(bad) != 3 {
		t.Fatalf("bad patterns = %v, want the 3 invalid ones refused", bad)
	}
	tests := []struct {
		host string
		want bool
	}{
		{"api.example.com", true},
		{"API.EXAMPLE.COM.", true},
		{"example.com", false},
		{"x.api.example.com", false}, // exact entries do not cover subdomains
		{"a.example.org", true},
		{"a.b.example.org", true},
		{"example.org", false},    // the wildcard needs a label below the suffix
		{"badexample.org", false}, // label boundary
		{"example.org.evil", false},
		{"127.0.0.1", true},
		{"::1", true},
		{"[::1]", true},
		{"::ffff:127.0.0.1", true}, // mapped form of an allowed IPv4 address
		{"127.0.0.2", false},
		{"evil.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			t.Parallel()
			h, err := normalizeHost(tt.host)
			got := err == nil && m.allows(h)
			if got != tt.want {
				t.Errorf("allows(%q) = %v (normalised %q, err %v), want %v", tt.host, got, h, err, tt.want)
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
		{"host:80", false},
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
