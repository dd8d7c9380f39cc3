package host_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/host/config"
)

// MCP sessions: a key holds at most mcp.max_sessions_per_key; another key
// still opens sessions and calls tools; a session that ends gives its unit
// back.
func TestMCPSessionsShare(t *testing.T) {
	t.Parallel()
	a, b := newKey(t, "a", "*"), newKey(t, "b", "*")
	th := sharesHost(t, func(c *config.Config) {
		c.MCP.MaxSessions, c.MCP.MaxSessionsPerKey = 4, 2
	}, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	connect := func(key apiKey) (*sdk.ClientSession, error) {
		client := sdk.NewClient(&sdk.Implementation{Name: "shares-test", Version: "1"}, nil)
		hc := &http.Client{Transport: bearer{key: key.Secret, base: httpClient.Transport}}
		return client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp", HTTPClient: hc}, nil)
	}
	first, err := connect(a)
	if err != nil {
		t.Fatalf("A's first session: %v", err)
	}
	if _, err := connect(a); err != nil {
		t.Fatalf("A's second session: %v", err)
	}
	// A's third initialize, as the wire carries it.
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	r, err := send(ctx, httpClient, th.URL+"/mcp", map[string]string{"Authorization": "Bearer " + a.Secret,
		"Accept": "application/json, text/event-stream"}, []byte(initialize))
	if err != nil {
		t.Fatal(err)
	}
	wantQuota(t, "A's third session", r.Status, string(r.Body), "mcp.max_sessions_per_key")

	cs, err := connect(b)
	if err != nil {
		t.Fatalf("B while A sits at its share: %v", err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("B's tool call: %+v, %v", res, err)
	}

	if err := first.Close(); err != nil { // DELETE /mcp
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool {
		s, err := connect(a)
		if err == nil {
			_ = s.Close()
		}
		return err == nil
	}) {
		t.Error("A's ended session was not given back")
	}
}

// clientConn is one HTTP/1.1 connection from a chosen loopback address
// (Linux routes all of 127.0.0.0/8 to lo): several clients on one machine.
type clientConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialFrom(t *testing.T, url, from string) *clientConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &clientConn{c: c, br: bufio.NewReader(c)}
}

// do sends one request (a POST when body is set) and reads the response; a
// response that closes the connection is read to its end, so the host has
// freed the connection when do returns.
func (cc *clientConn) do(t *testing.T, key, path, body string) (int, string) {
	t.Helper()
	_ = cc.c.SetDeadline(time.Now().Add(60 * time.Second))
	method, auth := "GET", ""
	if body != "" {
		method = "POST"
	}
	if key != "" {
		auth = "Authorization: Bearer " + key + "\r\n"
	}
	fmt.Fprintf(cc.c, "%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		method, path, cc.c.RemoteAddr(), auth, len(body), body)
	resp, err := http.ReadResponse(cc.br, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.Close {
		if _, err := cc.br.ReadByte(); err != io.EOF {
			t.Fatalf("%s %s: the connection stays open after Connection: close (%v)", method, path, err)
		}
	}
	return resp.StatusCode, string(b)
}

// HTTP connections: one client address holds at most
// http.max_conns_per_addr; another address is served as usual; and with
// every connection taken, /health still answers 200 from the reserve (it
// answered 503 before).
func TestHTTPConnectionsShare(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("needs several loopback addresses: Linux routes 127.0.0.0/8 to lo")
	}
	a, b := newKey(t, "a", "*"), newKey(t, "b", "*")
	th := sharesHost(t, func(c *config.Config) {
		c.HTTP.MaxConns, c.HTTP.MaxConnsPerAddr, c.HTTP.ReservedConns = 4, 2, 4
		c.HTTP.ReadTimeout, c.HTTP.IdleTimeout = 5*time.Minute, 10*time.Minute // held connections stay
	}, a, b)
	list := string(rpcBody("ListTasks", map[string]any{}))

	for range 2 { // client A (127.0.0.2) holds its share
		if status, body := dialFrom(t, th.URL, "127.0.0.2").do(t, a.Secret, "/rpc", list); status != http.StatusOK {
			t.Fatalf("A within its share: HTTP %d %s", status, body)
		}
	}
	status, body := dialFrom(t, th.URL, "127.0.0.2").do(t, a.Secret, "/rpc", list)
	wantQuota(t, "A past its share", status, body, "http.max_conns_per_addr")
	if status, body := dialFrom(t, th.URL, "127.0.0.2").do(t, "", "/health", ""); status != http.StatusOK {
		t.Errorf("A past its share: /health HTTP %d %s, want 200", status, body)
	}

	// Client B (127.0.0.3) is served, and takes the host's last connections.
	held := dialFrom(t, th.URL, "127.0.0.3")
	if status, body := held.do(t, b.Secret, "/rpc", list); status != http.StatusOK {
		t.Fatalf("B while A sits at its share: HTTP %d %s", status, body)
	}
	if status, _ := dialFrom(t, th.URL, "127.0.0.3").do(t, b.Secret, "/rpc", list); status != http.StatusOK {
		t.Fatalf("B's second connection: HTTP %d", status)
	}

	// The host is full: a third client still reads /health and the card.
	for _, path := range []string{"/health", "/.well-known/agent-card.json"} {
		if status, body := dialFrom(t, th.URL, "127.0.0.4").do(t, "", path, ""); status != http.StatusOK {
			t.Errorf("full host: %s HTTP %d %s, want 200", path, status, body)
		}
	}
	status, body = dialFrom(t, th.URL, "127.0.0.4").do(t, b.Secret, "/rpc", list)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "http.max_conns") {
		t.Errorf("full host: /rpc HTTP %d %s, want 503 naming http.max_conns", status, body)
	}
	if status, _ := held.do(t, b.Secret, "/rpc", list); status != http.StatusOK {
		t.Errorf("B's held connection on a full host: HTTP %d", status)
	}
}
