package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"
	"syscall"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/share"
	"github.com/skillhost/skillhost/host/internal/transport/grpcx"
)

// grpcBinding is the A2A gRPC binding (grpc.listen): its own listener,
// served by grpc-go beside the Fiber app (README "gRPC binding").
type grpcBinding struct {
	ln     net.Listener
	srv    *grpcx.Server
	served atomic.Bool // Serve took over the listener
}

// listenGRPC binds grpc.listen (nothing when it is empty) and records the
// bound address in h.cfg, so the card names the real port of ":0".
func (h *Host) listenGRPC() error {
	addr := h.cfg.GRPC.Listen
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("grpc.listen %s: %w (another process serves this port: stop it, or choose another with grpc.listen)", addr, err)
		}
		return fmt.Errorf("grpc.listen %s: %w", addr, err)
	}
	h.grpc = &grpcBinding{ln: ln}
	h.cfg.GRPC.Listen = ln.Addr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil && h.cfg.PublicURL == "" {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			h.log.Warn("gRPC listens on every interface without public_url: the Agent Card publishes "+h.cfg.GRPC.Listen+
				", which clients cannot reach; set public_url (its host name is published with the gRPC port)", "grpc.listen", addr)
		}
	}
	return nil
}

// setupGRPC builds the gRPC server over the A2A service: the engine's
// middleware for every call, the HTTP transport's keys and certificate,
// rpc.max_body for messages, a2a.max_streams (and its per-key share) for
// streams as for SSE, http.write_timeout for a stream's life.
func (h *Host) setupGRPC(tlsCfg *tls.Config) {
	if h.grpc == nil {
		return
	}
	handler := a2a.NewGRPCHandler(h.engine, h.tasks, h.log)
	c := h.cfg
	h.grpc.srv = grpcx.New(grpcx.Config{
		Auth: h.authn, Errors: handler.GRPCStatus, TLS: tlsCfg, MaxMessageBytes: int(c.RPC.MaxBody),
		MaxConns: c.GRPC.MaxConns, MaxConnsPerAddr: shareOrNone(c.GRPC.MaxConnsPerAddr),
		MaxConcurrentStreams: c.GRPC.MaxConcurrentStreams, MaxStreamDuration: c.HTTP.WriteTimeout,
		HandshakeTimeout: c.HTTP.ReadTimeout, IdleTimeout: c.HTTP.IdleTimeout, Logger: h.log,
	}, handler)
}

// serveGRPC serves gRPC until shutdown; the channel reports a failure
// (nil channel: gRPC is off, which a select never picks).
func (h *Host) serveGRPC() <-chan error {
	if h.grpc == nil || h.grpc.srv == nil {
		return nil
	}
	errc := make(chan error, 1)
	h.grpc.served.Store(true)
	go func() {
		if err := h.grpc.srv.Serve(h.grpc.ln); err != nil {
			errc <- err
		}
	}()
	h.log.Info("serving gRPC (A2A gRPC binding)", "addr", h.grpc.ln.Addr().String(), "tls", h.cfg.HTTP.TLSEnabled(),
		"advertised", grpcPublicAddr(h.cfg), "access", h.accessMode())
	return errc
}

// shutdownGRPC stops gRPC: streams end at once, unary calls finish within
// ctx; a listener never served is closed.
func (h *Host) shutdownGRPC(ctx context.Context) error {
	switch {
	case h.grpc == nil:
		return nil
	case h.grpc.srv != nil && h.grpc.served.Load():
		if err := h.grpc.srv.Shutdown(ctx); err != nil {
			return fmt.Errorf("grpc shutdown: %w", err)
		}
		return nil
	}
	if err := h.grpc.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// grpcShares are the gRPC server's counted resources (none when off).
func (h *Host) grpcShares() []*share.Counter {
	if h.grpc == nil || h.grpc.srv == nil {
		return nil
	}
	return h.grpc.srv.Shares()
}

// grpcPublicAddr is the gRPC interface URL the card publishes: host:port
// as A2A v1.0 writes gRPC interfaces — public_url's host name with
// grpc.listen's port when public_url is set, else grpc.listen itself; ""
// when gRPC is off.
func grpcPublicAddr(cfg config.Config) string {
	addr := cfg.GRPC.Listen
	if addr == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if u, err := url.Parse(cfg.PublicURL); err == nil && cfg.PublicURL != "" && u.Hostname() != "" {
		return net.JoinHostPort(u.Hostname(), port)
	}
	return addr
}
