// Package hostpattern is the grammar and the coverage rule of host patterns:
// a manifest's permissions.allowed_hosts entries and the operator's
// policy.allowed_host_patterns. A pattern is an exact lower-case host name
// or "*.suffix" (label boundaries), optionally followed by ":port" (without
// one: the default ports 80 and 443); the policy may also say "*" for any
// host and port.
//
//	hostpattern.Valid("*.example.com:8443", false) // true
//	hostpattern.Covers("*.example.com", "api.example.com") // true
package hostpattern

import (
	"regexp"
	"strconv"
	"strings"
)

var reLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Valid accepts "host.name" or "*.suffix" (and "*" when star is set), each
// optionally followed by ":port" (1-65535).
func Valid(p string, star bool) bool {
	if p == "*" {
		return star
	}
	h, _, ok := Split(p)
	if !ok || len(h) > 253 {
		return false
	}
	h = strings.TrimPrefix(h, "*.")
	for _, label := range strings.Split(h, ".") {
		if !reLabel.MatchString(label) {
			return false
		}
	}
	return true
}

// Split splits an optional ":port" off a pattern; port 0 means none (the
// default ports 80 and 443). ok is false for a malformed port.
func Split(p string) (host string, port uint16, ok bool) {
	host, ps, found := strings.Cut(p, ":")
	if !found {
		return p, 0, true
	}
	n, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || n == 0 || ps[0] == '0' || ps[0] == '+' {
		return "", 0, false
	}
	return host, uint16(n), true
}

// Covers reports whether everything req matches is matched by pat. "*"
// covers everything; "*.example.com" covers "a.example.com",
// "*.example.com" and "*.a.example.com" (label boundaries; not
// "example.com" itself nor "badexample.com"); an exact host covers itself.
// Ports must agree: a pattern with ":port" covers requests for that port,
// one without covers requests without (the default ports 80 and 443).
func Covers(pat, req string) bool {
	if pat == "*" {
		return true
	}
	pat, patPort, _ := Split(pat)
	req, reqPort, _ := Split(req)
	if patPort != reqPort {
		return false
	}
	suffix, wild := strings.CutPrefix(pat, "*.")
	if !wild {
		return req == pat
	}
	if r, ok := strings.CutPrefix(req, "*."); ok {
		return r == suffix || strings.HasSuffix(r, "."+suffix)
	}
	return strings.HasSuffix(req, "."+suffix)
}
