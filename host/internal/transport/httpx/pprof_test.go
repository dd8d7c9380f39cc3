package httpx_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// getWith GETs url with an optional API key and returns the status and body.
func getWith(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPprofIsOffByDefault(t *testing.T) {
	t.Parallel()
	base := startServer(t, httpx.Config{})
	if status, _ := getWith(t, base+"/debug/pprof/", ""); status != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ with http.pprof off: %d, want 404", status)
	}
}

func TestPprofLoopback(t *testing.T) {
	t.Parallel()
	base := startServer(t, httpx.Config{HTTP: httpSection(func(c *config.HTTP) { c.Pprof = true })})
	tests := []struct {
		path   string
		status int
		body   string
	}{
		{"/debug/pprof/", 200, "goroutine"},
		{"/debug/pprof/heap?debug=1", 200, "heap profile"},
		{"/debug/pprof/goroutine?debug=1", 200, "goroutine profile"},
		{"/debug/pprof/cmdline", 404, ""},
		{"/debug/pprof/cmdline/", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, body := getWith(t, base+tt.path, "")
			if status != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("GET %s: %d %.200q, want %d containing %q", tt.path, status, body, tt.status, tt.body)
			}
		})
	}
}

// With API keys, the profiler takes the scope /metrics takes.
func TestPprofNeedsTheMetricsScope(t *testing.T) {
	t.Parallel()
	digest := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	keys, err := auth.NewKeySet([]auth.KeySpec{
		{ID: "ops", SHA256: digest("ops-secret-0123456789"), Scopes: []string{"method:metrics"}},
		{ID: "app", SHA256: digest("app-secret-0123456789"), Scopes: []string{"skill:*"}},
	}, auth.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	base := startServer(t, httpx.Config{HTTP: httpSection(func(c *config.HTTP) { c.Pprof = true }), Auth: auth.NewAuthenticator(keys, nil)})
	for key, want := range map[string]int{"": 401, "app-secret-0123456789": 403, "ops-secret-0123456789": 200} {
		if status, body := getWith(t, base+"/debug/pprof/heap?debug=1", key); status != want {
			t.Errorf("key %q: %d %.200q, want %d", key, status, body, want)
		}
	}
}
