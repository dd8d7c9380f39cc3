package httpx

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/share"
)

// connCounters are the connection caps of a Server: conns (http.max_conns,
// http.max_conns_per_addr of them per client address; 0: no share) and the
// reserve (http.reserved_conns, a quarter of it per address) that answers
// only the public documents once conns refuses.
func connCounters(c Config) (conns, reserve *share.Counter) {
	cfg := c.HTTP
	per := cfg.MaxConnsPerAddr
	conns = share.New(share.Config{
		Resource: "http_connections", What: "HTTP connections", Holder: "this client address",
		Limit: cfg.MaxConns, LimitKey: "http.max_conns", Share: per, ShareKey: "http.max_conns_per_addr",
		Full: fault.Newf(fault.ResourceExhausted, fault.ReasonResourceExhausted,
			"%d HTTP connections are open on this host, the limit (http.max_conns); retry later", cfg.MaxConns),
		Over: fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"this client address holds %d HTTP connections, its share of this host (http.max_conns_per_addr); close one first", per),
	})
	if cfg.ReservedConns > 0 {
		reserve = share.New(share.Config{
			Resource: "http_reserve", What: "reserved HTTP connections", Holder: "this client address",
			Limit: cfg.ReservedConns, LimitKey: "http.reserved_conns", Share: max(1, cfg.ReservedConns/4),
		})
	}
	return conns, reserve
}

// countingListener counts every accepted connection: within conns it is
// served as usual; past conns (the host's cap, or its address's share) but
// within the reserve it answers only the public documents, one request,
// then closes (Server.reserved); past both it is told why and closed.
type countingListener struct {
	net.Listener
	conns, reserve *share.Counter
	plain          bool // not under TLS: a refused connection gets a raw HTTP answer
}

// Accept returns the next connection that fits; those that do not are
// answered and closed here.
func (l *countingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		holder := share.AddrHolder(c.RemoteAddr())
		release, refusal := l.conns.Acquire(holder)
		if refusal == nil {
			return &countedConn{Conn: c, release: release, remote: c.RemoteAddr().String()}, nil
		}
		if l.reserve != nil {
			if release, err := l.reserve.Acquire(holder); err == nil {
				return &countedConn{Conn: c, release: release, refusal: fault.From(refusal), remote: c.RemoteAddr().String()}, nil
			}
		}
		l.drop(c, fault.From(refusal))
	}
}

// drop answers a connection that fits nowhere (when it is plain HTTP) and
// closes it, without waiting for its request.
func (l *countingListener) drop(c net.Conn, fe *fault.Error) {
	if l.plain {
		status, text := fe.HTTPStatus(), fe.Message()
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s",
			status, http.StatusText(status), len(text), text)
	}
	_ = c.Close()
}

// countedConn is an accepted connection holding its unit until closed.
type countedConn struct {
	net.Conn
	release func()
	// refusal is why the connection came from the reserve (nil: it did
	// not): it answers only the public documents.
	refusal *fault.Error
	// remote is the client's address as text, made once: every request
	// names it (transport info, access record).
	remote string
}

// Close frees the connection's unit (once) and closes it.
func (c *countedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// countedOf is the countedConn under conn (TLS included), or nil.
func countedOf(conn net.Conn) *countedConn {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	cc, _ := conn.(*countedConn)
	return cc
}

// remoteOf is the client's address as text: its connection's, made once
// per connection (a mounted app's connections are not counted here).
func remoteOf(c *fiber.Ctx) string {
	if cc := countedOf(c.Context().Conn()); cc != nil && cc.remote != "" {
		return cc.remote
	}
	return c.Context().RemoteAddr().String()
}

// reserved serves a connection taken from the reserve: GET /health, the
// Agent Cards and the JWKS are answered (so a full host still reports its
// health), everything else is refused with why the connection was over its
// cap (429 key_quota for its address's share, 503 when the host is full);
// either way the connection then closes and its reserve unit is free again.
func (s *Server) reserved(c *fiber.Ctx) error {
	cc := countedOf(c.Context().Conn())
	if cc == nil || cc.refusal == nil {
		return c.Next()
	}
	c.Context().SetConnectionClose()
	if (c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead) && publicPath(c.Path()) {
		return c.Next()
	}
	c.Set(fiber.HeaderRetryAfter, "1")
	return s.sendError(c, cc.refusal)
}

// publicPath reports whether path is one of the public documents a
// reserved connection answers.
func publicPath(path string) bool {
	switch path {
	case "/health", "/.well-known/agent-card.json", JWKSPath:
		return true
	}
	name, ok := strings.CutPrefix(path, "/agents/")
	name, ok2 := strings.CutSuffix(name, "/.well-known/agent-card.json")
	return ok && ok2 && name != "" && !strings.Contains(name, "/")
}

// Shares are the server's counted resources (for metrics and admin).
func (s *Server) Shares() []*share.Counter {
	if s.reserve == nil {
		return []*share.Counter{s.conns}
	}
	return []*share.Counter{s.conns, s.reserve}
}
