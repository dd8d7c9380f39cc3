package httpx

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"github.com/gofiber/fiber/v2"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// errClientGone is the cancellation cause of a request whose client closed
// its connection.
var errClientGone = errors.New("httpx: the client closed the connection")

// requestContext is the context of one request: derived from the server's
// lifetime context, carrying the transport info and the principal guard
// attached (auth.From), and canceled when the
// client closes its connection (as net/http does), so the call it started —
// down to its sandbox call — stops instead of running to its deadline for
// nobody. done releases it; call it when the response is complete.
func (s *Server) requestContext(c *fiber.Ctx) (ctx context.Context, done func()) {
	return s.requestContextWith(c, s.transportInfo(c))
}

// requestContextWith is requestContext with the transport info given.
func (s *Server) requestContextWith(c *fiber.Ctx, info jsonrpc.TransportInfo) (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancelCause(auth.With(jsonrpc.WithTransport(s.base, info), principalOf(c)))
	stop := watchPeer(c.Context().Conn(), func() { cancel(errClientGone) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// socket is the connection whose file descriptor watchPeer polls: the
// accepted one, under TLS and the connection count.
func socket(conn net.Conn) net.Conn {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if cc, ok := conn.(*countedConn); ok {
		conn = cc.Conn
	}
	return conn
}
