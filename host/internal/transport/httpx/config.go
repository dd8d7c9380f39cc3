package httpx

import (
	"log/slog"
	"time"
)

// Config configures the HTTP transport. Zero fields take the defaults.
type Config struct {
	// Version is reported by /health. Optional. Default: "dev".
	Version string
	// BodyLimit caps request bodies; larger ones get -32600 body_too_large.
	// Optional. Default: 1 MiB.
	BodyLimit int
	// ReadTimeout bounds reading a whole request (no slowloris).
	// Optional. Default: 10s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response. Optional. Default: 5m (streams).
	WriteTimeout time.Duration
	// IdleTimeout closes idle keep-alive connections. Optional. Default: 60s.
	IdleTimeout time.Duration
	// MaxConns caps concurrent connections. Optional. Default: 1024.
	MaxConns int
	// KeepAlive is the interval of SSE keep-alive comments. Optional. Default: 15s.
	KeepAlive time.Duration
	// Logger receives request errors. Optional. Default: slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.BodyLimit <= 0 {
		c.BodyLimit = 1 << 20
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 10 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Minute
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 60 * time.Second
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 1024
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
