package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/skillhost/skillhost/host/internal/auth"
)

// KeySet builds the API key set of auth.keys with the limits of
// auth.limits; every invalid entry is reported, naming its key.
func (a Auth) KeySet() (*auth.KeySet, error) {
	limits, err := a.Limits.limits()
	if err != nil {
		return nil, err
	}
	specs := make([]auth.KeySpec, len(a.Keys))
	for i, k := range a.Keys {
		specs[i] = auth.KeySpec{ID: k.ID, SHA256: k.SHA256, Scopes: k.Scopes, Rate: k.Rate}
	}
	ks, err := auth.NewKeySet(specs, limits)
	if err != nil {
		return nil, fmt.Errorf("config %w", err)
	}
	return ks, nil
}

func (l AuthLimits) limits() (auth.Limits, error) {
	r, err := auth.ParseRate(l.Rate)
	if err != nil {
		return auth.Limits{}, fmt.Errorf("config auth.limits.rate: %w", err)
	}
	sr, err := auth.ParseRate(l.SessionRate)
	if err != nil {
		return auth.Limits{}, fmt.Errorf("config auth.limits.session_rate: %w", err)
	}
	if l.MaxOpenSessions < 0 || l.MaxConcurrentCalls < 0 {
		return auth.Limits{}, fmt.Errorf("config auth.limits: max_open_sessions and max_concurrent_calls must not be negative (0 = unlimited)")
	}
	return auth.Limits{Rate: r, SessionRate: sr, MaxOpenSessions: l.MaxOpenSessions,
		MaxConcurrentCalls: l.MaxConcurrentCalls, MaxContextBytes: int64(l.MaxContextBytes)}, nil
}

// TLSEnabled reports whether HTTPS is configured.
func (h HTTP) TLSEnabled() bool { return h.TLS.CertFile != "" || h.TLS.KeyFile != "" }

// LoopbackListen reports whether addr (host:port) listens on loopback
// only: a loopback IP or "localhost". An empty host or an unspecified
// address (0.0.0.0, ::) listens everywhere.
func LoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// validateSecurity checks auth.*, http.tls, http.allow_insecure_remote,
// http.allowed_origins and http.allowed_hosts.
func (c Config) validateSecurity() []error {
	var errs []error
	if _, err := c.Auth.KeySet(); err != nil {
		errs = append(errs, err)
	}
	if (c.HTTP.TLS.CertFile == "") != (c.HTTP.TLS.KeyFile == "") {
		errs = append(errs, fmt.Errorf("config http.tls: set both cert_file and key_file (PEM), or neither"))
	}
	if c.Listen != "" && !c.HTTP.TLSEnabled() && !c.HTTP.AllowInsecureRemote && !LoopbackListen(c.Listen) {
		errs = append(errs, fmt.Errorf("config listen: %q is not a loopback address, and plain HTTP there would carry API keys and "+
			"session data in clear text: set http.tls.cert_file and http.tls.key_file, or http.allow_insecure_remote: true "+
			"(for example behind a TLS-terminating proxy)", c.Listen))
	}
	for i, o := range c.HTTP.AllowedOrigins {
		if _, err := NormalizeOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("config http.allowed_origins[%d]: %w", i, err))
		}
	}
	for i, h := range c.HTTP.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ @") {
			errs = append(errs, fmt.Errorf("config http.allowed_hosts[%d]: %q is not a host name or host:port", i, h))
		}
	}
	return errs
}

// NormalizeOrigin returns an origin as browsers send it: lower-case
// "scheme://host[:port]" with no default port, path or trailing slash.
func NormalizeOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q is not an origin like https://app.example or http://localhost:3000", s)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}
