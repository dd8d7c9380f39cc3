package httpx_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// countStream yields 1..n then io.EOF.
type countStream struct{ i, n int }

func (s *countStream) Next(ctx context.Context) (any, error) {
	if s.i >= s.n {
		return nil, io.EOF
	}
	s.i++
	return map[string]int{"n": s.i}, nil
}

type cards struct{}

func (cards) Card(context.Context) ([]byte, string, error) {
	return []byte(`{"name":"test"}`), `"abc"`, nil
}

func (cards) AgentCard(_ context.Context, name string) ([]byte, string, error) {
	if name != "echo" {
		return nil, "", fault.New(fault.AgentNotFound, "unknown_agent", "no agent "+name)
	}
	return []byte(`{"name":"echo"}`), `"e"`, nil
}

// startServer serves a real engine on 127.0.0.1 and returns its base URL.
func startServer(t *testing.T, cfg httpx.Config) string {
	t.Helper()
	eng := jsonrpc.NewEngine()
	eng.Register("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) { return req.Params, nil })
	eng.Register("count", func(context.Context, *jsonrpc.Request) (any, error) { return &countStream{n: 3}, nil })
	eng.Register("slow", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		time.Sleep(300 * time.Millisecond)
		return "done", nil
	})
	srv := httpx.New(cfg, eng, cards{}, http.NotFoundHandler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String()
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestRPCOverHTTP(t *testing.T) {
	t.Parallel()
	base := startServer(t, httpx.Config{BodyLimit: 4096})
	tests := []struct {
		name       string
		path, body string
		wantStatus int
		wantReason string // error data.reason; "" for a result
		wantResult string
	}{
		{"request", "/rpc", `{"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":1}}`, 200, "", `{"a":1}`},
		{"notification", "/rpc", `{"jsonrpc":"2.0","method":"echo","params":{}}`, 204, "", ""},
		{"unknown method is HTTP 200", "/rpc", `{"jsonrpc":"2.0","id":1,"method":"nope"}`, 200, "unknown_method", ""},
		{"body too large", "/rpc", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`, 413, "body_too_large", ""},
		{"events take notifications", "/events", `{"jsonrpc":"2.0","method":"echo","params":{}}`, 202, "", ""},
		{"events refuse requests", "/events", `{"jsonrpc":"2.0","id":1,"method":"echo"}`, 200, "invalid_request", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := post(t, base+tt.path, tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.wantStatus, body)
			}
			if resp.Header.Get("X-Request-ID") == "" {
				t.Error("no X-Request-ID header")
			}
			if tt.wantStatus == 204 || tt.wantStatus == 202 {
				return
			}
			var got struct {
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Data map[string]any `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			if tt.wantReason != "" {
				if got.Error == nil || got.Error.Data["reason"] != tt.wantReason {
					t.Fatalf("want error reason %q, got %s", tt.wantReason, body)
				}
				return
			}
			if diff := cmp.Diff(tt.wantResult, string(got.Result)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHealthAndCards(t *testing.T) {
	t.Parallel()
	base := startServer(t, httpx.Config{Version: "9.9.9"})
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if health["status"] != "healthy" || health["version"] != "9.9.9" || health["timestamp"] == nil {
		t.Errorf("health = %v", health)
	}

	resp, err = http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("ETag") != `"abc"` || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age") {
		t.Errorf("card headers: ETag %q Cache-Control %q", resp.Header.Get("ETag"), resp.Header.Get("Cache-Control"))
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/.well-known/agent-card.json", nil)
	req.Header.Set("If-None-Match", `"abc"`)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("conditional GET: status %d, want 304", resp.StatusCode)
	}
	for _, inm := range []string{`W/"abc"`, `*`, `"x", "abc"`} {
		req, _ := http.NewRequest(http.MethodGet, base+"/.well-known/agent-card.json", nil)
		req.Header.Set("If-None-Match", inm)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match %s: status %d, want 304", inm, resp.StatusCode)
		}
	}
	resp, err = http.Get(base + "/agents/nope/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown agent card: status %d, want 404", resp.StatusCode)
	}
}

func TestStreamIsSSE(t *testing.T) {
	t.Parallel()
	base := startServer(t, httpx.Config{})
	resp, err := http.Post(base+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":"s1","method":"count"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, line)
		}
	}
	want := []map[string]any{
		{"jsonrpc": "2.0", "id": "s1", "result": map[string]any{"n": 1.0}},
		{"jsonrpc": "2.0", "id": "s1", "result": map[string]any{"n": 2.0}},
		{"jsonrpc": "2.0", "id": "s1", "result": map[string]any{"n": 3.0}},
	}
	got := make([]map[string]any, len(events))
	for i := range events {
		if err := json.Unmarshal([]byte(events[i]), &got[i]); err != nil {
			t.Fatalf("event %d %q: %v", i, events[i], err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	eng := jsonrpc.NewEngine()
	started := make(chan struct{})
	eng.Register("slow", func(context.Context, *jsonrpc.Request) (any, error) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		return "done", nil
	})
	srv := httpx.New(httpx.Config{}, eng, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	type result struct {
		body []byte
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"slow"}`))
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- result{b, err}
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	r := <-res
	if r.err != nil || !strings.Contains(string(r.body), `"done"`) {
		t.Fatalf("in-flight call: %s, %v", r.body, r.err)
	}
}

// endless streams one event, then waits for its context to end.
type endless struct{ sent bool }

func (s *endless) Next(ctx context.Context) (any, error) {
	if !s.sent {
		s.sent = true
		return "first", nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestShutdownEndsStreams: an open SSE stream does not hold Shutdown for its
// whole grace period.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	eng := jsonrpc.NewEngine()
	eng.Register("forever", func(context.Context, *jsonrpc.Request) (any, error) { return &endless{}, nil })
	srv := httpx.New(httpx.Config{}, eng, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"forever"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "first") {
		t.Fatalf("first event: %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Shutdown took %v with an open stream", d)
	}
}

// TestEventsEchoRefusedID: a request posted to /events is refused with its
// own id echoed, as JSON-RPC requires.
func TestEventsEchoRefusedID(t *testing.T) {
	t.Parallel()
	base := startServer(t, httpx.Config{})
	_, body := post(t, base+"/events", `{"jsonrpc":"2.0","id":"ev-9","method":"echo"}`)
	var got struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &got); err != nil || string(got.ID) != `"ev-9"` {
		t.Errorf("id = %s (%v), want \"ev-9\"; body %s", got.ID, err, body)
	}
}
