package httpx_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/testutil"
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
	eng := jsonrpc.NewEngine(engineLimits)
	eng.Register("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) { return req.Params, nil })
	eng.Register("count", func(context.Context, *jsonrpc.Request) (any, error) { return &countStream{n: 3}, nil })
	srv := httpx.New(cfg, eng, cards{}, http.NotFoundHandler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String()
}

// httpSection is the default http.* section with edit applied.
func httpSection(edit func(*config.HTTP)) config.HTTP {
	c := config.Defaults().HTTP
	edit(&c)
	return c
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
	base := startServer(t, httpx.Config{HTTP: httpSection(func(c *config.HTTP) { c.BodyLimit = 4096 })})
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
	eng := jsonrpc.NewEngine(engineLimits)
	started, release := make(chan struct{}), make(chan struct{})
	eng.Register("slow", func(context.Context, *jsonrpc.Request) (any, error) {
		close(started)
		<-release
		return "done", nil
	})
	srv := httpx.New(httpx.Config{}, eng, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	type result struct {
		body []byte
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Post("http://"+addr+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"slow"}`))
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- result{b, err}
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	// Once the listener refuses connections, Shutdown is waiting for the
	// in-flight call; only then may it finish.
	testutil.Eventually(t, 10*time.Second, "the listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(release)
	if err := <-shut; err != nil {
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
	eng := jsonrpc.NewEngine(engineLimits)
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

// serveEngine serves eng on 127.0.0.1 and returns its base URL.
func serveEngine(t *testing.T, eng *jsonrpc.Engine) string {
	t.Helper()
	srv := httpx.New(httpx.Config{}, eng, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String()
}

// TestClientDisconnectCancelsTheCall: a client that goes away mid-call
// cancels the call's context (the server's lifetime context is not the
// request's), and the connection after it is served normally.
func TestClientDisconnectCancelsTheCall(t *testing.T) {
	t.Parallel()
	eng := jsonrpc.NewEngine(engineLimits)
	started, ended := make(chan struct{}), make(chan error, 1)
	eng.Register("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		close(started)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(time.Minute):
			ended <- errors.New("still running a minute after the client left")
		}
		return nil, ctx.Err()
	})
	eng.Register("echo", func(ctx context.Context, req *jsonrpc.Request) (any, error) { return req.Params, ctx.Err() })
	base := serveEngine(t, eng)

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/rpc", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"block"}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel() // closes the connection
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call's context: %v, want canceled", err)
	}
	_, body := post(t, base+"/rpc", `{"jsonrpc":"2.0","id":2,"method":"echo","params":[1]}`)
	if !strings.Contains(string(body), `"result":[1]`) {
		t.Errorf("next call: %s", body)
	}
}

// TestKeepAliveRequestsAreNotCanceled: calls that follow each other on one
// kept-alive connection each run with a live context (watching a connection
// for its client's departure must not disturb the next request on it).
func TestKeepAliveRequestsAreNotCanceled(t *testing.T) {
	t.Parallel()
	eng := jsonrpc.NewEngine(engineLimits)
	eng.Register("live", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return "live", nil
	})
	base := serveEngine(t, eng)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for i := range 20 {
		resp, err := client.Post(base+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"live"}`))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"result":"live"`) {
			t.Fatalf("call %d: %s", i, b)
		}
	}
}

// panicky streams one event, then panics.
type panicky struct{ sent bool }

func (p *panicky) Next(context.Context) (any, error) {
	if !p.sent {
		p.sent = true
		return "first", nil
	}
	panic("stream bug")
}

// failing streams one error of an A2A kind.
type failing struct{}

func (failing) Next(context.Context) (any, error) {
	return nil, fault.New(fault.TaskNotFound, fault.ReasonTaskNotFound, "gone")
}

// TestSSEStreamFailures: a panicking stream ends with -32603 and the host
// keeps serving; an A2A v1.0 method's stream error keeps the ErrorInfo shape
// its unstreamed errors have.
func TestSSEStreamFailures(t *testing.T) {
	t.Parallel()
	eng := jsonrpc.NewEngine(engineLimits)
	eng.Register("panics", func(context.Context, *jsonrpc.Request) (any, error) { return &panicky{}, nil }, jsonrpc.Streaming())
	eng.RegisterA2A("SubscribeToTask", func(context.Context, *jsonrpc.Request) (any, error) { return failing{}, nil }, jsonrpc.Streaming())
	eng.Register("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) { return req.Params, nil })
	base := serveEngine(t, eng)
	tests := []struct {
		method string
		want   []string // per event: "result" or the error code and data's first byte
	}{
		{"panics", []string{"result", "-32603 {"}},
		{"SubscribeToTask", []string{"-32001 ["}},
	}
	for _, tt := range tests {
		resp, err := http.Post(base+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":"s","method":"`+tt.method+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Error *struct {
					Code int             `json:"code"`
					Data json.RawMessage `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: event %q: %v", tt.method, line, err)
			}
			if ev.Error == nil {
				got = append(got, "result")
			} else {
				got = append(got, fmt.Sprintf("%d %c", ev.Error.Code, ev.Error.Data[0]))
			}
		}
		resp.Body.Close()
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s events (-want +got):\n%s", tt.method, diff)
		}
	}
	_, body := post(t, base+"/rpc", `{"jsonrpc":"2.0","id":2,"method":"echo","params":[1]}`)
	if !strings.Contains(string(body), `"result":[1]`) {
		t.Errorf("after the panic: %s", body)
	}
}

// engineLimits are the limits of the tests' engines.
var engineLimits = jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20}
