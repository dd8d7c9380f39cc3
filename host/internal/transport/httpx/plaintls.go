package httpx

import (
	"errors"
	"net"
	"strconv"
	"sync"
)

// tlsHandshakeRecord is the first byte of every TLS connection: the record
// type of the ClientHello (RFC 8446 §5.1).
const tlsHandshakeRecord = 0x16

// plainOnTLS is the answer a plain-HTTP request to the HTTPS port gets
// instead of a closed connection (which clients report as a bare EOF).
var plainOnTLS = func() string {
	const body = "this port serves HTTPS: use an https:// URL (http.tls is configured)\n"
	return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

// errPlainOnTLS ends a connection that did not start a TLS handshake.
var errPlainOnTLS = errors.New("httpx: plain HTTP on the HTTPS port")

// sniffListener hands out connections that answer plainOnTLS when their
// first byte is not a TLS handshake record. It sits under tls.NewListener:
// the byte is read by the TLS handshake in the connection's own goroutine,
// so Accept never waits for a client.
type sniffListener struct{ net.Listener }

func (l sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c}, nil
}

// sniffConn checks the first byte read from the client.
type sniffConn struct {
	net.Conn
	once sync.Once
	bad  bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.once.Do(func() {
		if n > 0 && p[0] != tlsHandshakeRecord {
			c.bad = true
			_, _ = c.Conn.Write([]byte(plainOnTLS))
		}
	})
	if c.bad {
		return 0, errPlainOnTLS
	}
	return n, err
}
