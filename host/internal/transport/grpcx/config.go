package grpcx

import (
	"context"
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/skillhost/skillhost/host/internal/auth"
)

// Defaults of the Config fields.
const (
	DefaultMaxMessageBytes      = 1 << 20 // rpc.max_body's default
	DefaultMaxConns             = 256
	DefaultMaxConnsPerAddr      = 64
	DefaultMaxConcurrentStreams = 100
	DefaultHandshakeTimeout     = 10 * time.Second
	DefaultIdleTimeout          = 60 * time.Second
	// MaxHeaderListBytes caps the metadata of one call (HTTP/2 header
	// list, uncompressed): an API key and a few A2A headers fit many times.
	MaxHeaderListBytes = 16 << 10
)

// Config configures the gRPC transport. Zero fields take the defaults.
type Config struct {
	// Auth authenticates API keys and session tokens. Optional. Default:
	// nil, or one without keys: only loopback clients are served, as the
	// local principal LoopbackPrincipal.
	Auth *auth.Authenticator
	// Errors turns an error (a refused call) into the gRPC status sent
	// (a2a's GRPCHandler.GRPCStatus: host/fault's table). Optional.
	// Default: a status with the error's kind's code and no details.
	Errors func(ctx context.Context, err error) error
	// TLS, when set, serves gRPC over TLS with it (the HTTP listener's
	// certificate). Optional. Default: plain HTTP/2 (h2c).
	TLS *tls.Config
	// MaxMessageBytes caps a received message (rpc.max_body); larger ones
	// are refused with RESOURCE_EXHAUSTED before they are decoded.
	// Optional. Default: DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxConns caps the open connections (grpc.max_conns); past it a new
	// connection is closed at once. Optional. Default: DefaultMaxConns.
	MaxConns int
	// MaxConnsPerAddr caps those of one client address (IPv6: one /64)
	// within MaxConns (grpc.max_conns_per_addr). Optional. Default:
	// DefaultMaxConnsPerAddr, at most MaxConns; -1: no per-address share.
	MaxConnsPerAddr int
	// MaxConcurrentStreams caps the calls in flight on one connection
	// (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; grpc.max_concurrent_streams).
	// Optional. Default: DefaultMaxConcurrentStreams.
	MaxConcurrentStreams int
	// MaxStreamDuration ends a streaming call after this long, as
	// http.write_timeout ends an SSE response. Optional. Default: 0, none.
	MaxStreamDuration time.Duration
	// HandshakeTimeout bounds a new connection's TLS and HTTP/2 handshake
	// (http.read_timeout). Optional. Default: DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection with no call for this long
	// (http.idle_timeout). Optional. Default: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Logger receives audit lines of refused calls. Optional. Default:
	// discard.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	switch {
	case c.MaxConnsPerAddr == 0:
		c.MaxConnsPerAddr = min(DefaultMaxConnsPerAddr, c.MaxConns)
	case c.MaxConnsPerAddr < 0:
		c.MaxConnsPerAddr = 0 // no per-address share
	}
	if c.MaxConcurrentStreams <= 0 {
		c.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
