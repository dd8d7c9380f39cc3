package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// httpLine is the part of an HTTP access line the test checks.
type httpLine struct {
	HTTPMethod string `json:"http_method"`
	Path       string `json:"path"`
	Route      string `json:"route"`
	KeyID      string `json:"key_id"`
	Status     string `json:"status"`
	HTTPStatus int    `json:"http_status"`
	Reason     string `json:"reason"`
}

// Every HTTP request the JSON-RPC engine did not handle gets one access
// line naming its route, status, reason and key, hostile ones refused before
// routing (a body over the limit) or before a method ran (credentials,
// scope, media type) included; JSON-RPC calls keep their own line only; a
// /health probe logs nothing at info. /metrics counts every request by
// route and status, never by the client's path.
func TestHTTPAccess(t *testing.T) {
	t.Parallel()
	ops, runner := newKey(t, "ops", "*"), newKey(t, "runner", "skill:*")
	th, logs := mustHostWith(t, t.TempDir(), func(c *config.Config) {
		c.Auth.Keys = []config.AuthKey{ops.Entry, runner.Entry}
		c.HTTP.BodyLimit = 64 * config.KiB
	})
	addr := strings.TrimPrefix(th.URL, "http://")
	bearer := func(k apiKey) string { return "Bearer " + k.Secret }
	tests := []struct {
		name       string
		method     string
		path       string
		headers    map[string]string
		body       string
		wantStatus int
		want       *httpLine // nil: no HTTP access line
	}{
		{"admin document", "GET", "/admin/status", map[string]string{"Authorization": bearer(ops)}, "", 200,
			&httpLine{"GET", "/admin/status", "/admin/:doc", "ops", "ok", 200, ""}},
		{"admin without the scope", "GET", "/admin/pool", map[string]string{"Authorization": bearer(runner)}, "", 403,
			&httpLine{"GET", "/admin/pool", "/admin/:doc", "runner", "error", 403, "scope_denied"}},
		{"wrong key", "POST", "/rpc", map[string]string{"Authorization": "Bearer sk_wrong", "Content-Type": "application/json"},
			`{"jsonrpc":"2.0","id":1,"method":"_cleveragents/session/create"}`, 401,
			&httpLine{"POST", "/rpc", "/rpc", "", "error", 401, "invalid_credentials"}},
		{"form body", "POST", "/rpc", map[string]string{"Authorization": bearer(ops), "Content-Type": "text/plain"}, "{}", 415,
			&httpLine{"POST", "/rpc", "/rpc", "", "error", 415, "unsupported_media_type"}},
		{"no such route", "GET", "/wp-admin/setup.php", map[string]string{"Authorization": bearer(ops)}, "", 404,
			&httpLine{"GET", "/wp-admin/setup.php", "unmatched", "", "error", 404, ""}},
		{"dashboard file", "GET", "/ui/", nil, "", 200, &httpLine{"GET", "/ui/", "/ui", "", "ok", 200, ""}},
		{"JSON-RPC call: its own line only", "POST", "/rpc", map[string]string{"Authorization": bearer(ops), "Content-Type": "application/json"},
			`{"jsonrpc":"2.0","id":1,"method":"_cleveragents/session/create"}`, 200, nil},
		{"health probe", "GET", "/health", nil, "", 200, nil},
	}
	for i, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		req, _ := http.NewRequestWithContext(ctx, tt.method, th.URL+tt.path, strings.NewReader(tt.body))
		for k, v := range tt.headers {
			req.Header.Set(k, v)
		}
		req.Header.Set("X-Request-ID", fmt.Sprintf("access-%d", i))
		resp, err := httpClient.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.wantStatus {
			t.Errorf("%s: HTTP %d, want %d", tt.name, resp.StatusCode, tt.wantStatus)
		}
	}
	// A body over http.body_limit is refused by the HTTP server before any
	// route runs; it is logged and counted all the same.
	oversized := fmt.Sprintf("POST /rpc HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Type: application/json\r\n"+
		"Authorization: %s\r\nX-Request-ID: access-oversized\r\nContent-Length: %d\r\n\r\n{}", addr, bearer(ops), 1<<20)
	if status := rawExchange(t, addr, []byte(oversized)); status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: HTTP %d, want 413", status)
	}

	// The access lines are written before the response is sent.
	byID := map[string][]httpLine{}
	for _, raw := range logs.lines(`"msg":"access"`, `"http_status"`) {
		var l struct {
			httpLine
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatal(err)
		}
		byID[l.RequestID] = append(byID[l.RequestID], l.httpLine)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []httpLine
			if tt.want != nil {
				want = []httpLine{*tt.want}
			}
			if diff := cmp.Diff(want, byID[fmt.Sprintf("access-%d", i)]); diff != "" {
				t.Errorf("HTTP access lines (-want +got):\n%s", diff)
			}
		})
	}
	wantOversized := []httpLine{{"POST", "/rpc", "/rpc", "", "error", 413, "body_too_large"}}
	if diff := cmp.Diff(wantOversized, byID["access-oversized"]); diff != "" {
		t.Errorf("oversized body's access line (-want +got):\n%s", diff)
	}
	if got := len(logs.lines(`"msg":"access"`, `"request_id":"access-6"`, `"method":"_cleveragents/session/create"`)); got != 1 {
		t.Errorf("%d JSON-RPC access lines for the call, want 1", got)
	}

	families := mustMetrics(t, th, ops.Secret)
	for _, c := range []struct {
		route, status string
		want          float64
	}{
		{"/admin/:doc", "200", 1}, {"/admin/:doc", "403", 1}, {"/rpc", "401", 1}, {"/rpc", "415", 1}, {"/rpc", "413", 1},
		{"/rpc", "200", 1}, {"unmatched", "404", 1}, {"/ui", "200", 1}, {"/health", "200", 1},
	} {
		if got := sample(families, "skillhost_http_requests_total", map[string]string{"route": c.route, "status": c.status}); got != c.want {
			t.Errorf("skillhost_http_requests_total{route=%q,status=%q} = %v, want %v; series: %v", c.route, c.status, got, c.want, families["skillhost_http_requests_total"])
		}
	}
	for _, m := range families["skillhost_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && strings.Contains(l.GetValue(), "wp-admin") {
				t.Errorf("a client's path became a label: %v", m)
			}
		}
	}
	// A request the engine refuses before any method runs is logged under
	// the transport's request id (no call began, so no invocation had one).
	if _, err := send(context.Background(), httpClient, th.URL+"/rpc",
		map[string]string{"Authorization": bearer(ops), "X-Request-ID": "access-rejected"}, []byte(`{not json`)); err != nil {
		t.Fatal(err)
	}
	if got := len(logs.lines(`"msg":"access"`, `"request_id":"access-rejected"`, `"reason":"parse_error"`)); got != 1 {
		t.Errorf("%d JSON-RPC access lines of the refused body under its request id, want 1:\n%s", got, strings.Join(logs.lines(`"reason":"parse_error"`), "\n"))
	}
}

// log.access: false silences every access line, JSON-RPC and HTTP; the
// requests are still counted.
func TestAccessLogOff(t *testing.T) {
	t.Parallel()
	th, logs := mustHostWith(t, t.TempDir(), func(c *config.Config) { c.Log.Access = false })
	th.mustSession(t)
	if status, _, _ := th.getAs(t, "", "/admin/status", nil); status != http.StatusOK {
		t.Fatalf("GET /admin/status: HTTP %d", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := send(ctx, httpClient, th.URL+"/rpc", map[string]string{"Content-Type": "text/plain"}, []byte("{}"))
	if err != nil || r.Status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain body: %v, HTTP %d", err, r.Status)
	}
	if lines := logs.lines(`"msg":"access"`); len(lines) != 0 {
		t.Errorf("access lines with log.access off:\n%s", strings.Join(lines, "\n"))
	}
	families := mustMetrics(t, th, "")
	for _, c := range []struct{ route, status string }{{"/rpc", "200"}, {"/admin/:doc", "200"}, {"/rpc", "415"}} {
		if got := sample(families, "skillhost_http_requests_total", map[string]string{"route": c.route, "status": c.status}); got != 1 {
			t.Errorf("skillhost_http_requests_total{route=%q,status=%q} = %v, want 1", c.route, c.status, got)
		}
	}
}
