package httpx_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// rawConn is one client connection from a chosen loopback address (Linux
// routes all of 127.0.0.0/8 to lo), so a test can be several clients.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialFrom(t *testing.T, addr, from string) *rawConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{c: c, br: bufio.NewReader(c)}
}

// do sends one request and reads its response; a response that closes the
// connection is read to the end of the connection, so the server has
// closed it (and freed its unit) when do returns.
func (rc *rawConn) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	_ = rc.c.SetDeadline(time.Now().Add(30 * time.Second))
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		method, path, rc.c.RemoteAddr(), len(body), body)
	if _, err := io.WriteString(rc.c, req); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.Close {
		if _, err := rc.br.ReadByte(); err != io.EOF {
			t.Fatalf("%s %s: the connection stays open after Connection: close (%v)", method, path, err)
		}
	}
	return resp.StatusCode, string(b)
}

// wantRPCRefusal checks a JSON-RPC error body's code, reason and limit.
func wantRPCRefusal(t *testing.T, what, body string, reason, limit string) {
	t.Helper()
	var r struct {
		Error struct {
			Code int            `json:"code"`
			Data map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Error.Code != -32106 || r.Error.Data["reason"] != reason || r.Error.Data["limit"] != limit {
		t.Errorf("%s: body %s; want -32106 %s naming %s", what, body, reason, limit)
	}
}

// One client address holds at most its share of the connections; past it
// (and past the host's cap) a connection answers only /health and the
// cards, from the reserve; another address is served as usual.
func TestConnectionShares(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("needs several loopback addresses: Linux routes 127.0.0.0/8 to lo")
	}
	base := startServer(t, httpx.Config{HTTP: httpSection(func(c *config.HTTP) {
		c.MaxConns, c.MaxConnsPerAddr, c.ReservedConns = 4, 2, 4
		c.ReadTimeout, c.IdleTimeout = 5*time.Minute, 10*time.Minute
	})})
	addr := strings.TrimPrefix(base, "http://")
	echo := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":1}}`

	// Client A (127.0.0.2) holds its two connections.
	for range 2 {
		if status, body := dialFrom(t, addr, "127.0.0.2").do(t, "GET", "/health", ""); status != http.StatusOK {
			t.Fatalf("A within its share: /health %d %s", status, body)
		}
	}
	status, body := dialFrom(t, addr, "127.0.0.2").do(t, "POST", "/rpc", echo)
	if status != http.StatusTooManyRequests {
		t.Errorf("A past its share: /rpc %d, want 429", status)
	}
	wantRPCRefusal(t, "A past its share", body, "key_quota", "http.max_conns_per_addr")
	if status, body := dialFrom(t, addr, "127.0.0.2").do(t, "GET", "/health", ""); status != http.StatusOK {
		t.Errorf("A past its share: /health %d %s, want 200 from the reserve", status, body)
	}
	if status, _ := dialFrom(t, addr, "127.0.0.2").do(t, "GET", "/.well-known/agent-card.json", ""); status != http.StatusOK {
		t.Errorf("A past its share: the card %d, want 200 from the reserve", status)
	}

	// Client B (127.0.0.3) is served while A sits at its share, and takes
	// the host's last two connections.
	b := dialFrom(t, addr, "127.0.0.3")
	if status, body := b.do(t, "POST", "/rpc", echo); status != http.StatusOK || !strings.Contains(body, `"result":{"x":1}`) {
		t.Errorf("B while A is at its share: %d %s", status, body)
	}
	if status, _ := dialFrom(t, addr, "127.0.0.3").do(t, "GET", "/health", ""); status != http.StatusOK {
		t.Errorf("B's second connection: %d", status)
	}

	// The host is full: client C gets 503 naming http.max_conns, and /health
	// still answers.
	status, body = dialFrom(t, addr, "127.0.0.4").do(t, "POST", "/rpc", echo)
	if status != http.StatusServiceUnavailable {
		t.Errorf("C on a full host: /rpc %d, want 503", status)
	}
	wantRPCRefusal(t, "C on a full host", body, "resource_exhausted", "http.max_conns")
	if status, body := dialFrom(t, addr, "127.0.0.4").do(t, "GET", "/health", ""); status != http.StatusOK || !strings.Contains(body, `"healthy"`) {
		t.Errorf("C on a full host: /health %d %s, want 200", status, body)
	}
	if status, _ := b.do(t, "POST", "/rpc", echo); status != http.StatusOK {
		t.Errorf("B's held connection on a full host: %d", status)
	}

	// Past the reserve too (an address holds a quarter of it: one), a
	// connection is answered at once and closed.
	idle := dialFrom(t, addr, "127.0.0.4") // takes C's reserved connection, sends nothing
	_ = idle
	dropped := dialFrom(t, addr, "127.0.0.4")
	_ = dropped.c.SetDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(dropped.br, nil)
	if err != nil {
		t.Fatalf("past the reserve: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("past the reserve: %d, want 503", resp.StatusCode)
	}
}
