package assemble

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"
	"syscall"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a/grpcbind"
	"github.com/skillhost/skillhost/host/internal/share"
	"github.com/skillhost/skillhost/host/internal/transport/grpcx"
)

// grpcBinding is the A2A gRPC binding (grpc.listen): its own listener,
// served by grpc-go beside the Fiber app (docs/guides/a2a.md, "gRPC
// binding").
type grpcBinding struct {
	ln     net.Listener
	srv    *grpcx.Server // nil until the grpc component built it
	served atomic.Bool   // Serve took over the listener
}

// provisionGRPCListener binds grpc.listen (nothing when it is empty) beside
// the HTTP listener, so a port in use fails the start at once, and records
// the bound address in the root's configuration: the cards name the real
// port of ":0".
func (h *Root) provisionGRPCListener(context.Context) error {
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
	h.onClose("grpc listener", func(context.Context) error {
		if h.grpc.served.Load() { // the gRPC server owns it now
			return nil
		}
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})
	if host, _, err := net.SplitHostPort(addr); err == nil && h.cfg.PublicURL == "" {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			h.log.Warn("gRPC listens on every interface without public_url: the Agent Card publishes "+h.cfg.GRPC.Listen+
				", which clients cannot reach; set public_url (its host name is published with the gRPC port)", "grpc.listen", addr)
		}
	}
	return nil
}

// provisionGRPC builds the gRPC server (grpc.*) over the A2A service: the
// engine's middleware for every call, the HTTP transport's keys and
// certificate, rpc.max_body for messages, a2a.max_streams (and its per-key
// share) for streams as for SSE, http.write_timeout for a stream's life.
func (h *Root) provisionGRPC(context.Context) error {
	if h.grpc == nil {
		return nil
	}
	handler := grpcbind.New(h.engine, h.tasks, h.log)
	c := h.cfg
	h.grpc.srv = grpcx.New(grpcx.Config{
		GRPC: c.GRPC, Auth: h.authn, Errors: handler.Status, TLS: h.tlsCfg, MaxMessageBytes: int(c.RPC.MaxBody),
		MaxStreamDuration: c.HTTP.WriteTimeout, HandshakeTimeout: c.HTTP.ReadTimeout, IdleTimeout: c.HTTP.IdleTimeout,
		Logger: h.log,
	}, handler)
	h.onClose("grpc", func(ctx context.Context) error {
		if h.grpc.served.Load() { // Serve's shutdown ended it
			return nil
		}
		return h.grpc.srv.Shutdown(ctx) // never served: its context ends
	})
	return nil
}

// serveGRPC serves gRPC until shutdown; the channel reports a failure
// (nil channel: gRPC is off, which a select never picks).
func (h *Root) serveGRPC() <-chan error {
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

// shutdownGRPC stops a served gRPC server: streams end at once, unary
// calls finish within ctx. One never served is Close's (its components).
func (h *Root) shutdownGRPC(ctx context.Context) error {
	if h.grpc == nil || h.grpc.srv == nil || !h.grpc.served.Load() {
		return nil
	}
	if err := h.grpc.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("grpc shutdown: %w", err)
	}
	return nil
}

// grpcShares are the gRPC server's counted resources (none when off).
func (h *Root) grpcShares() []*share.Counter {
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
