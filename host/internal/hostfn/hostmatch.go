package hostfn

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// maxHostLen is the longest DNS name (RFC 1035).
const maxHostLen = 253

// hostMatcher decides whether a URL host and port are covered by a
// plugin's allowed_hosts: exact hosts, or "*.suffix" matching any name
// strictly below suffix on a label boundary ("*.example.com" matches
// "a.example.com" and "a.b.example.com", not "example.com" nor
// "badexample.com"), each optionally with ":port". An entry without a port
// allows the default ports 80 and 443 only.
type hostMatcher struct {
	entries []hostEntry
}

// hostEntry is one parsed allowed_hosts entry.
type hostEntry struct {
	host     string // normalised; for a wildcard, the suffix with its leading dot
	wildcard bool
	port     uint16 // 0: the default ports 80 and 443
}

type badPattern struct {
	pattern string
	err     error
}

func newHostMatcher(patterns []string) (hostMatcher, []badPattern) {
	var m hostMatcher
	var bad []badPattern
	for _, p := range patterns {
		e, err := parseHostPattern(p)
		if err != nil {
			bad = append(bad, badPattern{p, err})
			continue
		}
		m.entries = append(m.entries, e)
	}
	return m, bad
}

// allows reports whether host (already normalised by normalizeHost) and
// port are covered.
func (m hostMatcher) allows(host string, port uint16) bool {
	for _, e := range m.entries {
		if e.port == 0 && port != 80 && port != 443 || e.port != 0 && e.port != port {
			continue
		}
		if e.wildcard && len(host) > len(e.host) && strings.HasSuffix(host, e.host) || !e.wildcard && host == e.host {
			return true
		}
	}
	return false
}

// ValidateHostPattern reports whether p is a valid permissions.allowed_hosts
// entry: a host name, an IP address, or "*." followed by a host name,
// optionally followed by ":port" (IPv6 addresses with a port in brackets).
// Names must be ASCII (write internationalised names in their xn-- form).
func ValidateHostPattern(p string) error {
	_, err := parseHostPattern(p)
	return err
}

func parseHostPattern(p string) (hostEntry, error) {
	h, port, err := splitPort(p)
	if err != nil {
		return hostEntry{}, fmt.Errorf("allowed host %q: %w", p, err)
	}
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		n, err := normalizeHost(rest)
		if err != nil {
			return hostEntry{}, fmt.Errorf("allowed host %q: %w", p, err)
		}
		if _, err := netip.ParseAddr(n); err == nil {
			return hostEntry{}, fmt.Errorf("allowed host %q: a wildcard needs a domain name, not an address", p)
		}
		return hostEntry{host: "." + n, wildcard: true, port: port}, nil
	}
	if strings.Contains(h, "*") {
		return hostEntry{}, fmt.Errorf("allowed host %q: only a leading \"*.\" wildcard is supported", p)
	}
	n, err := normalizeHost(h)
	if err != nil {
		return hostEntry{}, fmt.Errorf("allowed host %q: %w", p, err)
	}
	return hostEntry{host: n, port: port}, nil
}

// splitPort splits an optional ":port" off an allowed_hosts entry. A bare
// IPv6 address (several colons, no brackets) has no port.
func splitPort(p string) (string, uint16, error) {
	var h, ps string
	switch {
	case strings.HasPrefix(p, "[") && strings.Contains(p, "]:"):
		i := strings.LastIndex(p, "]:")
		h, ps = p[:i+1], p[i+2:]
	case strings.Count(p, ":") == 1:
		h, ps, _ = strings.Cut(p, ":")
	default:
		return p, 0, nil
	}
	port, err := parsePort(ps)
	return h, port, err
}

// parsePort parses a decimal port 1..65535 (no sign, no leading zero).
func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '0' || s[0] == '+' {
		return 0, fmt.Errorf("port %q must be a number from 1 to 65535", s)
	}
	return uint16(n), nil
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
