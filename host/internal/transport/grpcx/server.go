package grpcx

import (
	"context"
	"errors"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/skillhost/skillhost/host/internal/share"
)

// Keepalive: the server pings a connection quiet for pingAfter (a stream
// waiting for task events included) and drops it when no answer comes in
// pingTimeout; a client may ping at most every minPing.
const (
	pingAfter   = time.Minute
	pingTimeout = 20 * time.Second
	minPing     = 10 * time.Second
)

// Service is what the server serves (a2a's GRPCHandler registers the A2A
// service).
type Service interface {
	RegisterWith(s *grpc.Server)
}

// Server is the gRPC transport. Create it with New; Serve it; Shutdown it.
type Server struct {
	cfg     Config
	grpc    *grpc.Server
	conns   *share.Counter
	streams context.Context // streaming calls; canceled when Shutdown starts
	endAll  context.CancelFunc
}

// New builds the server for svc.
func New(cfg Config, svc Service) *Server {
	cfg = cfg.withDefaults()
	streams, end := context.WithCancel(context.Background()) //nolint:contextcheck // server lifetime, ended by Shutdown
	s := &Server{cfg: cfg, conns: connCounter(cfg), streams: streams, endAll: end}
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.unary),
		grpc.ChainStreamInterceptor(s.stream),
		grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
		grpc.MaxConcurrentStreams(uint32(cfg.MaxConcurrentStreams)),
		grpc.MaxHeaderListSize(MaxHeaderListBytes),
		grpc.ConnectionTimeout(cfg.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: cfg.IdleTimeout, Time: pingAfter, Timeout: pingTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPing, PermitWithoutStream: true}),
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	s.grpc = grpc.NewServer(opts...)
	svc.RegisterWith(s.grpc)
	return s
}

// Serve accepts connections on ln (each counted, over TLS when Config.TLS
// is set) until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.grpc.Serve(&countingListener{Listener: ln, conns: s.conns})
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections and calls, ends the open streams,
// waits for the unary calls in flight until ctx ends, then closes every
// connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.endAll()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return ctx.Err()
	}
}

// Shares are the server's counted resources (for metrics and admin).
func (s *Server) Shares() []*share.Counter { return []*share.Counter{s.conns} }
