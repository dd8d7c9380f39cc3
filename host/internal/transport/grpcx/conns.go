package grpcx

import (
	"net"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/share"
)

// connCounter counts the open connections: Config.MaxConns on the host,
// Config.MaxConnsPerAddr of them per client address.
func connCounter(cfg Config) *share.Counter {
	return share.New(share.Config{
		Resource: "grpc_connections", What: "gRPC connections", Holder: "this client address",
		Limit: cfg.MaxConns, LimitKey: "grpc.max_conns", Share: cfg.MaxConnsPerAddr, ShareKey: "grpc.max_conns_per_addr",
		Full: fault.Newf(fault.ResourceExhausted, fault.ReasonResourceExhausted,
			"%d gRPC connections are open on this host, the limit (grpc.max_conns); retry later", cfg.MaxConns),
		Over: fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"this client address holds %d gRPC connections, its share of this host (grpc.max_conns_per_addr); close one first", cfg.MaxConnsPerAddr),
	})
}

// countingListener counts every accepted connection; one that does not fit
// is closed at once (gRPC has no answer before the HTTP/2 preface: the
// client sees UNAVAILABLE and may retry on a connection it already has).
type countingListener struct {
	net.Listener
	conns *share.Counter
}

// Accept returns the next connection that fits.
func (l *countingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		release, refusal := l.conns.Acquire(share.AddrHolder(c.RemoteAddr()))
		if refusal == nil {
			return &countedConn{Conn: c, release: release}, nil
		}
		_ = c.Close()
	}
}

// countedConn is an accepted connection holding its unit until closed.
type countedConn struct {
	net.Conn
	release func()
}

// Close frees the connection's unit (once) and closes it.
func (c *countedConn) Close() error {
	c.release()
	return c.Conn.Close()
}
