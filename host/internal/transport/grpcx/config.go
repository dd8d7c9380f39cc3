package grpcx

import (
	"context"
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// MaxHeaderListBytes caps the metadata of one call (HTTP/2 header list,
// uncompressed): an API key and a few A2A headers fit many times.
const MaxHeaderListBytes = 16 << 10

// Config configures the gRPC transport.
type Config struct {
	// GRPC is the grpc.* section: max_conns caps the open connections (past
	// it a new connection is closed at once), max_conns_per_addr those of
	// one client address (IPv6: one /64) within it (0: no per-address
	// share), max_concurrent_streams the calls in flight on one connection
	// (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). Its listen address is the
	// caller's to bind. Optional: the zero section is
	// config.Defaults().GRPC.
	config.GRPC
	// Auth authenticates API keys and session tokens. Optional. Default:
	// nil, or one without keys: only loopback clients are served, as the
	// local principal LoopbackPrincipal.
	Auth *auth.Authenticator
	// Errors turns an error (a refused call) into the gRPC status sent
	// (grpcbind's Handler.Status: host/fault's table). Optional.
	// Default: a status with the error's kind's code and no details.
	Errors func(ctx context.Context, err error) error
	// TLS, when set, serves gRPC over TLS with it (the HTTP listener's
	// certificate). Optional. Default: plain HTTP/2 (h2c).
	TLS *tls.Config
	// MaxMessageBytes caps a received message (rpc.max_body); larger ones
	// are refused with RESOURCE_EXHAUSTED before they are decoded.
	// Optional. Default: config.Defaults()'s rpc.max_body.
	MaxMessageBytes int
	// MaxStreamDuration ends a streaming call after this long, as
	// http.write_timeout ends an SSE response. Optional. Default: 0, none.
	MaxStreamDuration time.Duration
	// HandshakeTimeout bounds a new connection's TLS and HTTP/2 handshake
	// (http.read_timeout). Optional. Default: config.Defaults()'s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection with no call for this long
	// (http.idle_timeout). Optional. Default: config.Defaults()'s.
	IdleTimeout time.Duration
	// Logger receives audit lines of refused calls. Optional. Default:
	// discard.
	Logger *slog.Logger
}

// withDefaults resolves the zero fields to config.Defaults()' values of
// their keys (a zero grpc.* section is the whole default section).
func (c Config) withDefaults() Config {
	d := config.Defaults()
	if c.GRPC == (config.GRPC{}) {
		c.GRPC = d.GRPC
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = int(d.RPC.MaxBody)
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = d.HTTP.ReadTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = d.HTTP.IdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
