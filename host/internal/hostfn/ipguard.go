package hostfn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// refusedRanges are the destinations a plugin may not reach unless the
// operator lists them in net.allow_private. Checked on the address actually
// being dialed, after DNS, so rebinding cannot get around it.
var refusedRanges = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // includes 255.255.255.255
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local (private)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// classify returns why addr is internal ("loopback", "private", …) or ""
// for a public address. IPv4-mapped IPv6 addresses are judged as IPv4.
func classify(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	if !addr.IsValid() {
		return "invalid"
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	return ""
}

// refusedAddrError is returned by the dial guard before any packet is sent.
// Its text names the host the caller asked for and the rule that refused
// it, never the address a name resolved to: that address is internal
// knowledge (it maps the operator's network) and goes only to logs.
type refusedAddrError struct {
	Host   string     // the host name dialed ("" or the literal: Addr is what the caller wrote)
	Addr   netip.Addr // the address refused; not in Error()
	Reason string     // the range's name: loopback, private, cloud metadata, …
}

func (e *refusedAddrError) Error() string {
	if e.Host != "" {
		if a, err := netip.ParseAddr(strings.Trim(e.Host, "[]")); err != nil || a.Unmap().WithZone("") != e.Addr {
			return fmt.Sprintf("host %q resolves to a refused address (%s); net.allow_private does not allow it", e.Host, e.Reason)
		}
	}
	return fmt.Sprintf("address %s is refused (%s); net.allow_private does not allow it", e.Addr, e.Reason)
}

// dialGuard checks each address the dialer is about to connect to.
type dialGuard struct {
	allow []netip.Prefix
}

// check returns a *refusedAddrError unless addr is public or inside one of
// the operator's allow_private prefixes.
func (g dialGuard) check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	reason := classify(addr)
	if reason == "" {
		return nil
	}
	for _, p := range g.allow {
		if p.Contains(addr) {
			return nil
		}
	}
	return &refusedAddrError{Addr: addr, Reason: reason}
}

// control is a net.Dialer ControlContext hook: it runs after the socket is
// created and before connect(2), on the resolved address being dialed.
func (g dialGuard) control(_ context.Context, network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("network %q not allowed", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial guard: unparseable address %q: %w", address, err)
	}
	return g.check(ap.Addr())
}

// Dialer returns a dialer that refuses internal destinations (loopback,
// private, link-local, cloud metadata, …) unless p.AllowPrivate lists them,
// checked on each address actually dialed, so DNS rebinding cannot get
// around it. http_fetch uses it, and so does everything else the host sends
// to a URL a client chose (plan webhooks).
func (p NetPolicy) Dialer() *net.Dialer {
	return &net.Dialer{Timeout: p.Timeout, Resolver: p.Resolver, ControlContext: dialGuard{allow: p.AllowPrivate}.control}
}

// DialContext dials through Dialer; a refusal names the host dialed
// (address's host part), not the address it resolved to.
func (p NetPolicy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	conn, err := p.Dialer().DialContext(ctx, network, address)
	var refused *refusedAddrError
	if err != nil && errors.As(err, &refused) {
		named := *refused
		named.Host, _, _ = net.SplitHostPort(address)
		return nil, &named // not the *net.OpError around it: its text carries the resolved address
	}
	return conn, err
}

// Client returns an HTTP client for what the host sends to URLs a client
// chose (plan webhooks, A2A push notifications): every dial goes through
// Dialer (the guard), p.Timeout bounds a whole exchange, redirects are not
// followed (a redirect could lead past the guard's checks of the URL) and
// no proxy is read from the environment.
func (p NetPolicy) Client() *http.Client {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	transport := &http.Transport{
		Proxy:                  nil, // never from the environment
		DialContext:            p.DialContext,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckAddr reports (as an error naming the range) whether a dialer of
// NetPolicy.Dialer with allow as AllowPrivate would refuse addr.
func CheckAddr(addr netip.Addr, allow []netip.Prefix) error {
	return dialGuard{allow: allow}.check(addr)
}

// IsAddressRefused reports whether err, from a dial through NetPolicy.Dialer,
// is the guard's refusal.
func IsAddressRefused(err error) bool {
	var refused *refusedAddrError
	return errors.As(err, &refused)
}
