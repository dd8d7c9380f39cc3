package remote

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"

	"github.com/skillhost/skillhost/host/config"
)

// maxKeyBytes bounds a credentials key file.
const maxKeyBytes = 16 << 10

// peerConfig is one validated peer: its configuration with defaults, the
// key, the parsed URL and what its connections may reach.
type peerConfig struct {
	config.RemoteAgent
	key     string         // "" = none; never logged
	base    *url.URL       // url, without a trailing slash
	allow   []netip.Prefix // internal ranges the dial guard lets through
	origins map[string]bool
}

// newPeerConfig validates r (agents.remote[i]) and reads its key from a file
// or the environment (getenv).
func newPeerConfig(i int, r config.RemoteAgent, getenv func(string) string) (peerConfig, error) {
	key := fmt.Sprintf("config agents.remote[%d]", i)
	p := peerConfig{RemoteAgent: r.WithDefaults(), origins: map[string]bool{}}
	u, err := url.Parse(strings.TrimRight(r.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return p, fmt.Errorf("%s.url: %q must be an http or https URL with a host", key, r.URL)
	}
	p.base = u
	p.origins[origin(u)] = true
	for _, h := range r.Hosts {
		for _, scheme := range []string{"http", "https"} {
			hu := &url.URL{Scheme: scheme, Host: h}
			if hu.Port() == "" && scheme != u.Scheme {
				continue // a host without a port is allowed on url's scheme
			}
			p.origins[origin(hu)] = true
		}
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		ip = ip.Unmap().WithZone("")
		p.allow = append(p.allow, netip.PrefixFrom(ip, ip.BitLen())) // the operator named this address
	}
	for j, s := range r.AllowPrivate {
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			addr, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return p, fmt.Errorf("%s.allow_private[%d]: %q is not an address or CIDR prefix", key, j, s)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		p.allow = append(p.allow, prefix)
	}
	if p.key, err = readKey(r.Credentials, getenv); err != nil {
		return p, fmt.Errorf("%s.credentials: %w", key, err)
	}
	return p, nil
}

// readKey reads the key named by c; "" when none is configured.
func readKey(c config.RemoteCredentials, getenv func(string) string) (string, error) {
	var raw string
	switch {
	case c.KeyFile != "":
		f, err := os.Open(c.KeyFile)
		if err != nil {
			return "", fmt.Errorf("key_file: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxKeyBytes+1))
		if err != nil {
			return "", fmt.Errorf("key_file %s: %w", c.KeyFile, err)
		}
		if len(b) > maxKeyBytes {
			return "", fmt.Errorf("key_file %s: larger than %d bytes", c.KeyFile, maxKeyBytes)
		}
		raw = string(b)
	case c.KeyEnv != "":
		raw = getenv(c.KeyEnv)
		if raw == "" {
			return "", fmt.Errorf("key_env: the environment variable %s is empty or not set", c.KeyEnv)
		}
	default:
		return "", nil
	}
	k := strings.TrimSpace(raw)
	if k == "" || strings.ContainsAny(k, "\r\n\x00") {
		return "", errors.New("the key must be one non-empty line")
	}
	return k, nil
}

// origin is "scheme://host:port" with the scheme's default port made
// explicit and the host lower-cased.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// reaches reports whether a request to u may be sent: its origin is url's
// or one of hosts'.
func (p *peerConfig) reaches(u *url.URL) bool {
	return u != nil && u.User == nil && p.origins[origin(u)]
}

// cardURL is where the peer's card is read.
func (p *peerConfig) cardURL() string {
	return p.base.String() + "/.well-known/agent-card.json"
}
