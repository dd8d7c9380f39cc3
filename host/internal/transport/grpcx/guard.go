package grpcx

import (
	"context"
	"net"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// LoopbackPrincipal is the local principal of loopback clients when no API
// keys are configured: the HTTP transport's (httpx.LoopbackPrincipal), so
// a loopback client owns the same tasks on every binding.
const LoopbackPrincipal = "loopback"

// requestIDKey is the metadata key of a call's request id (the client's
// when sane, else the host's), sent back in the response header.
const requestIDKey = "x-request-id"

// unary admits a unary call (admit) and runs it with the principal and the
// transport info attached.
func (s *Server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := s.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// stream admits a streaming call like unary; the stream ends after
// MaxStreamDuration and when Shutdown starts (a stream lasts as long as
// its task: waiting for it would use the whole grace period).
func (s *Server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := s.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.streams, cancel)
	defer stop()
	if d := s.cfg.MaxStreamDuration; d > 0 {
		var end context.CancelFunc
		ctx, end = context.WithTimeout(ctx, d)
		defer end()
	}
	return handler(srv, &serverStream{ServerStream: ss, ctx: ctx})
}

// serverStream is a stream whose handlers see ctx.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context is the call's context: principal, transport info, limits.
func (s *serverStream) Context() context.Context { return s.ctx }

// admit authenticates a call (auth.Credential over its metadata, as HTTP
// reads its headers; loopback only without keys) and returns its context
// with the principal and the transport info ("grpc", the request id, the
// metadata as headers, the peer address). A refusal is the status to send,
// and its audit line is written.
func (s *Server) admit(ctx context.Context, method string) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	remote := ""
	var addr net.Addr
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		addr, remote = p.Addr, p.Addr.String()
	}
	id := auth.RequestID(first(md, requestIDKey))
	_ = grpc.SetHeader(ctx, metadata.Pairs(requestIDKey, id))
	info := jsonrpc.TransportInfo{Name: "grpc", RequestID: id, RemoteAddr: remote, Header: func(name string) string {
		return first(md, name)
	}}
	ctx = jsonrpc.WithTransport(ctx, info)
	p, err := s.authenticate(ctx, md, addr)
	if err != nil {
		fe := fault.From(err)
		if fe.Kind == fault.Unauthorized || fe.Kind == fault.Forbidden {
			s.cfg.Logger.WarnContext(ctx, "audit: request refused", "status", fe.Kind.HTTPStatus(), "reason", fe.Reason,
				"remote", remote, "request_id", id, "transport", "grpc", "method", clip(method))
		}
		return nil, s.errorStatus(ctx, err)
	}
	return auth.With(ctx, p), nil
}

// authenticate returns the call's principal: from its credential when keys
// are configured, else the loopback principal for loopback clients.
func (s *Server) authenticate(ctx context.Context, md metadata.MD, addr net.Addr) (auth.Principal, error) {
	if !s.cfg.Auth.Enabled() {
		if tcp, ok := addr.(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
			return auth.Principal{}, fault.New(fault.Forbidden, fault.ReasonLoopbackOnly,
				"this host has no API keys configured and serves loopback clients only")
		}
		return auth.Local(LoopbackPrincipal), nil
	}
	keys := md.Get("x-api-key")
	if len(keys) > 1 {
		return auth.Principal{}, fault.New(fault.Unauthorized, fault.ReasonInvalidCredentials, "more than one x-api-key value")
	}
	cred, err := auth.Credential(md.Get("authorization"), first(md, "x-api-key"))
	if err != nil {
		return auth.Principal{}, err
	}
	p, err := s.cfg.Auth.Authenticate(ctx, cred)
	if err == nil {
		return p, nil
	}
	if fe := fault.From(err); fe.Kind != fault.Unauthorized {
		s.cfg.Logger.ErrorContext(ctx, "authentication failed", "request_id", jsonrpc.TransportFrom(ctx).RequestID, "err", err)
		return auth.Principal{}, fault.New(fault.Internal, fault.ReasonInternal, "authentication is unavailable; retry")
	}
	return auth.Principal{}, err
}

// errorStatus is err as a gRPC status (Config.Errors).
func (s *Server) errorStatus(ctx context.Context, err error) error {
	if s.cfg.Errors != nil {
		return s.cfg.Errors(ctx, err)
	}
	fe, _ := fault.Safe(err)
	code := codes.Internal
	if code.UnmarshalJSON([]byte(strconv.Quote(fe.GRPCStatus()))) != nil {
		code = codes.Internal
	}
	return status.Error(code, fe.Message())
}

// first is the first value of a metadata key ("" when absent).
func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// clip keeps a client's method name short in logs.
func clip(m string) string {
	if len(m) > 96 {
		return strings.ToValidUTF8(m[:96], "") + "…"
	}
	return m
}
