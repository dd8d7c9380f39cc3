package hostfn

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// maxHostLen is the longest DNS name (RFC 1035).
const maxHostLen = 253

// hostMatcher decides whether a URL host is covered by a plugin's
// allowed_hosts: exact hosts, or "*.suffix" matching any name strictly below
// suffix on a label boundary ("*.example.com" matches "a.example.com" and
// "a.b.example.com", not "example.com" nor "badexample.com").
type hostMatcher struct {
	exact    map[string]bool
	suffixes []string // each with its leading dot: ".example.com"
}

type badPattern struct {
	pattern string
	err     error
}

func newHostMatcher(patterns []string) (hostMatcher, []badPattern) {
	m := hostMatcher{exact: map[string]bool{}}
	var bad []badPattern
	for _, p := range patterns {
		norm, wildcard, err := parseHostPattern(p)
		if err != nil {
			bad = append(bad, badPattern{p, err})
			continue
		}
		if wildcard {
			m.suffixes = append(m.suffixes, "."+norm)
		} else {
			m.exact[norm] = true
		}
	}
	return m, bad
}

// allows reports whether host (already normalised by normalizeHost) is covered.
func (m hostMatcher) allows(host string) bool {
	if m.exact[host] {
		return true
	}
	for _, s := range m.suffixes {
		if len(host) > len(s) && strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// ValidateHostPattern reports whether p is a valid permissions.allowed_hosts
// entry: a host name, an IP address, or "*." followed by a host name. Names
// must be ASCII (write internationalised names in their xn-- form).
func ValidateHostPattern(p string) error {
	_, _, err := parseHostPattern(p)
	return err
}

func parseHostPattern(p string) (host string, wildcard bool, err error) {
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		h, err := normalizeHost(rest)
		if err != nil {
			return "", false, fmt.Errorf("allowed host %q: %w", p, err)
		}
		if _, err := netip.ParseAddr(h); err == nil {
			return "", false, fmt.Errorf("allowed host %q: a wildcard needs a domain name, not an address", p)
		}
		return h, true, nil
	}
	if strings.Contains(p, "*") {
		return "", false, fmt.Errorf("allowed host %q: only a leading \"*.\" wildcard is supported", p)
	}
	h, err := normalizeHost(p)
	if err != nil {
		return "", false, fmt.Errorf("allowed host %q: %w", p, err)
	}
	return h, false, nil
}

// normalizeHost lower-cases a host, drops one trailing dot and IPv6
// brackets, and refuses anything that is neither an IP address nor an ASCII
// DNS name of letters, digits, '-' and '_' in labels of 1..63 bytes.
func normalizeHost(h string) (string, error) {
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", errors.New("addresses with a zone are not allowed")
		}
		return a.Unmap().String(), nil
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" {
		return "", errors.New("empty host")
	}
	if len(h) > maxHostLen {
		return "", fmt.Errorf("host longer than %d bytes", maxHostLen)
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("empty or over-long label")
		}
		for i := range len(label) {
			c := label[i]
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			case c >= 0x80:
				return "", errors.New("non-ASCII host: use its xn-- (punycode) form")
			default:
				return "", fmt.Errorf("invalid character %q in host", c)
			}
		}
	}
	return h, nil
}
