package host_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
)

// logBuffer collects a host's log lines (safe for concurrent writes).
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// lines returns the log lines containing every one of parts.
func (l *logBuffer) lines(parts ...string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// apiKey is a fresh random key and the config entry for it.
type apiKey struct {
	Secret string
	Entry  config.AuthKey
}

func newKey(t *testing.T, id string, scopes ...string) apiKey {
	t.Helper()
	secret := "sk_" + rand.Text()
	sum := sha256.Sum256([]byte(secret))
	return apiKey{Secret: secret, Entry: config.AuthKey{ID: id, SHA256: hex.EncodeToString(sum[:]), Scopes: scopes}}
}

// mustHostWith starts a host like mustHost after mutate has adjusted the
// configuration; its logs (JSON lines) are returned.
func mustHostWith(t *testing.T, pluginDir string, mutate func(*config.Config)) (*testHost, *logBuffer) {
	t.Helper()
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Data = t.TempDir()
	cfg.Plugins = pluginDir
	// Generous: parallel hosts under -race on a loaded machine sometimes need
	// more than 10 s to drain and close (seen as "http shutdown: context
	// deadline exceeded").
	cfg.HTTP.ShutdownTimeout = 30 * time.Second
	if mutate != nil {
		mutate(&cfg)
	}
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg, host.WithVersion("9.9.9-test"), host.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	if err != nil {
		cancel()
		t.Fatalf("host.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(60 * time.Second): // the 30 s shutdown grace, then closing
			t.Error("Serve did not return 60 s after its context ended")
		}
	})
	scheme := "http://"
	if cfg.HTTP.TLSEnabled() {
		scheme = "https://"
	}
	return &testHost{URL: scheme + h.Addr().String(), Plugins: pluginDir, h: h}, logs
}

// httpReply is one HTTP exchange with /rpc (or another route).
type httpReply struct {
	Status int
	Header http.Header
	Body   []byte
	RPC    rpcResponse // decoded when the body is one JSON-RPC response
}

// send posts body to url with headers (name → value) through hc.
func send(ctx context.Context, hc *http.Client, url string, headers map[string]string, body []byte) (httpReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return httpReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header[k] = []string{v} // exactly as written: header-name case games
	}
	resp, err := hc.Do(req)
	if err != nil {
		return httpReply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpReply{}, err
	}
	out := httpReply{Status: resp.StatusCode, Header: resp.Header, Body: b}
	_ = json.Unmarshal(b, &out.RPC)
	return out, nil
}

// rpcBody is a JSON-RPC request with id 1.
func rpcBody(method string, params any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return b
}

// as calls method on th with the key (as a Bearer credential; "" sends
// none) and returns the exchange.
func (th *testHost) as(t *testing.T, key, method string, params any) httpReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := map[string]string{}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	r, err := send(ctx, httpClient, th.URL+"/rpc", h, rpcBody(method, params))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return r
}

// mustAs is as, failing on an error response, and decodes the result.
func (th *testHost) mustAs(t *testing.T, key, method string, params any) map[string]any {
	t.Helper()
	r := th.as(t, key, method, params)
	if r.Status != http.StatusOK || r.RPC.Error != nil {
		t.Fatalf("%s: HTTP %d %s", method, r.Status, r.Body)
	}
	var out map[string]any
	if err := json.Unmarshal(r.RPC.Result, &out); err != nil {
		t.Fatalf("%s: result %s: %v", method, r.RPC.Result, err)
	}
	return out
}

// wantRefused checks an HTTP status, JSON-RPC code and reason (compared
// case-insensitively: A2A methods carry it upper-case in ErrorInfo data).
func wantRefused(t *testing.T, r httpReply, status, code int, reason string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("HTTP %d, want %d: %s", r.Status, status, r.Body)
	}
	if r.RPC.Error == nil || r.RPC.Error.Code != code || !strings.EqualFold(replyReason(r.Body), reason) {
		t.Errorf("error %+v, want %d %s: %s", r.RPC.Error, code, reason, r.Body)
	}
}

// replyReason reads the reason of an error response in either data shape
// (an object with "reason", or an array of google.rpc.ErrorInfo with it in
// the metadata) the way clients do: fault.Decode.
func replyReason(body []byte) string {
	var resp struct {
		Error struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &resp) != nil {
		return ""
	}
	return fault.Decode(resp.Error.Code, resp.Error.Message, resp.Error.Data).Reason
}

func (k apiKey) String() string { return fmt.Sprintf("key %s", k.Entry.ID) }
