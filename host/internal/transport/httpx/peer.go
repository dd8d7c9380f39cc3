package httpx

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

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
	stop := watchPeerAfter(c.Context().Conn(), watchAfter, func() { cancel(errClientGone) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// watchAfter is how long a request runs before its connection is watched
// (watchPeer): most requests are answered sooner, and a watch costs a
// goroutine, a system call and three deadline updates, a tenth of a small
// call's CPU; a client that leaves is then seen at most this much later.
const watchAfter = 5 * time.Millisecond

// watchPeerAfter is watchPeer started once d has passed, unless stop came
// first.
func watchPeerAfter(conn net.Conn, d time.Duration, gone func()) (stop func()) {
	w := &lateWatch{}
	w.timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.stopped {
			w.stop = watchPeer(conn, gone)
		}
	})
	return w.end
}

// lateWatch is a watch that starts late (watchPeerAfter).
type lateWatch struct {
	timer   *time.Timer
	mu      sync.Mutex
	stopped bool   // end ran: the watch must not start
	stop    func() // the watch's, once started
}

// end stops the watch, or keeps it from starting, and waits for it.
func (w *lateWatch) end() {
	if w.timer.Stop() {
		return // it never started
	}
	w.mu.Lock()
	w.stopped = true
	stop := w.stop
	w.mu.Unlock()
	if stop != nil {
		stop()
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
