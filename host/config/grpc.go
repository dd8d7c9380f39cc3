package config

import (
	"fmt"
	"net"
)

// GRPC configures the A2A gRPC binding, served on a listener of its own
// (docs/guides/a2a.md, "gRPC binding"). Off unless Listen is set.
type GRPC struct {
	// Listen is the gRPC address (host:port). Empty: gRPC is not served.
	// The Agent Card advertises it (protocolBinding GRPC) as host:port, with
	// public_url's host name when public_url is set.
	Listen string `koanf:"listen"`
	// MaxConns caps the open gRPC connections.
	MaxConns int `koanf:"max_conns"`
	// MaxConnsPerAddr caps the connections of one client address (IPv6:
	// one /64) within MaxConns (0: no per-address share).
	MaxConnsPerAddr int `koanf:"max_conns_per_addr"`
	// MaxConcurrentStreams caps the calls in flight on one connection
	// (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS).
	MaxConcurrentStreams int `koanf:"max_concurrent_streams"`
}

// DefaultGRPC is the gRPC section's default: off.
func DefaultGRPC() GRPC {
	return GRPC{MaxConns: 256, MaxConnsPerAddr: 64, MaxConcurrentStreams: 100}
}

// validateGRPC checks grpc.*: a host:port other than listen's, TLS (or
// http.allow_insecure_remote) off loopback as for HTTP, positive caps.
func (c Config) validateGRPC() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: "+format, append([]any{key}, args...)...))
	}
	g := c.GRPC
	if g.MaxConns < 1 {
		bad("grpc.max_conns", "must be greater than zero")
	} else if g.MaxConnsPerAddr < 0 || g.MaxConnsPerAddr > g.MaxConns {
		bad("grpc.max_conns_per_addr", "%d must be 0 (no per-address share) up to grpc.max_conns (%d)", g.MaxConnsPerAddr, g.MaxConns)
	}
	if g.MaxConcurrentStreams < 1 || g.MaxConcurrentStreams > 10000 {
		bad("grpc.max_concurrent_streams", "%d must be 1..10000", g.MaxConcurrentStreams)
	}
	if g.Listen == "" {
		return errs
	}
	_, port, err := net.SplitHostPort(g.Listen)
	if err != nil || port == "" {
		bad("grpc.listen", "%q is not host:port", g.Listen)
		return errs
	}
	if g.Listen == c.Listen && port != "0" {
		bad("grpc.listen", "%q is also listen: gRPC needs a port of its own (HTTP/2 beside Fiber's HTTP/1.1)", g.Listen)
	}
	if !c.HTTP.TLSEnabled() && !c.HTTP.AllowInsecureRemote && !LoopbackListen(g.Listen) {
		bad("grpc.listen", "%q is not a loopback address, and plain gRPC there would carry API keys and task data in clear "+
			"text: set http.tls.cert_file and http.tls.key_file (gRPC serves the same certificate), or "+
			"http.allow_insecure_remote: true (for example behind a TLS-terminating proxy)", g.Listen)
	}
	return errs
}
