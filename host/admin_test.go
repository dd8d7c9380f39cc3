package host_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// getAs fetches path with the key (none when "") and extra headers.
func (th *testHost) getAs(t *testing.T, key, path string, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, th.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header, []byte(b.String())
}

// The admin documents follow /rpc's access rules plus the scope
// method:admin; the dashboard's files are public with keys (they hold no
// data) and served with a strict Content-Security-Policy.
func TestAdminAccessWithKeys(t *testing.T) {
	t.Parallel()
	ops, admin, runner := newKey(t, "ops", "*"), newKey(t, "admin-only", "method:admin"), newKey(t, "runner", "skill:*")
	th, logs := mustHostWith(t, t.TempDir(), func(c *config.Config) {
		c.Auth.Keys = []config.AuthKey{ops.Entry, admin.Entry, runner.Entry}
	})
	tests := []struct {
		name, key, path string
		want            int
		reason          string
	}{
		{"no key", "", "/admin/status", http.StatusUnauthorized, "unauthenticated"},
		{"key in the URL", "", "/admin/status?api_key=" + ops.Secret, http.StatusUnauthorized, "unauthenticated"},
		{"key without the admin scope", runner.Secret, "/admin/plugins", http.StatusForbidden, "scope_denied"},
		{"wildcard key", ops.Secret, "/admin/status", http.StatusOK, ""},
		{"method:admin key", admin.Secret, "/admin/pool", http.StatusOK, ""},
		{"unknown document", ops.Secret, "/admin/secrets", http.StatusNotFound, ""},
		{"dashboard without a key", "", "/ui/", http.StatusOK, ""},
		{"dashboard script without a key", "", "/ui/app.js", http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, hdr, body := th.getAs(t, tt.key, tt.path, nil)
			if status != tt.want {
				t.Fatalf("GET %s: HTTP %d, want %d: %s", tt.path, status, tt.want, body)
			}
			if tt.reason != "" && replyReason(body) != tt.reason {
				t.Errorf("reason %q, want %q: %s", replyReason(body), tt.reason, body)
			}
			if strings.HasPrefix(tt.path, "/ui/") && !strings.Contains(hdr.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("no CSP on %s: %v", tt.path, hdr)
			}
			if strings.HasPrefix(tt.path, "/admin/") && status == http.StatusOK && hdr.Get("Cache-Control") != "no-store" {
				t.Errorf("admin document cacheable: %v", hdr)
			}
		})
	}
	if strings.Contains(logs.String(), ops.Secret) {
		t.Error("the key was logged")
	}
}

// Without keys the admin documents and the dashboard are served to loopback
// clients whose Host names this host (DNS rebinding guard), and not to
// other origins.
func TestAdminAccessLoopback(t *testing.T) {
	t.Parallel()
	th := mustHost(t, t.TempDir())
	tests := []struct {
		name, path string
		headers    map[string]string
		want       int
	}{
		{"status", "/admin/status", nil, http.StatusOK},
		{"dashboard", "/ui/", nil, http.StatusOK},
		{"dashboard without the slash", "/ui", nil, http.StatusOK},
		{"no such file", "/ui/nope.js", nil, http.StatusNotFound},
		{"no path escape", "/ui/../admin/status", nil, http.StatusNotFound},
		{"rebound Host", "/admin/status", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"rebound Host on the dashboard", "/ui/", map[string]string{"Host": "evil.example:80"}, http.StatusForbidden},
		{"other origin", "/admin/plugins", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, _, body := th.getAs(t, "", tt.path, tt.headers)
			if status != tt.want {
				t.Errorf("GET %s: HTTP %d, want %d: %.200s", tt.path, status, tt.want, body)
			}
		})
	}
	_, _, body := th.getAs(t, "", "/admin/plugins", nil)
	var doc struct {
		Plugins []any `json:"plugins"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Plugins == nil {
		t.Errorf("plugins document %s: %v", body, err)
	}
}

// GET /admin/plugins shows each folder's state: a loaded plugin with its
// effective limits, digest and skills; a broken folder as failed with its
// error; a loaded plugin whose new revision was refused keeps serving with
// the refusal shown, until a good revision clears it.
func TestAdminPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	mustPlugin(t, dir, "broken", "name: broken\n")
	th := mustHost(t, dir)
	type view struct {
		Name, Version, State, Error, Source, Digest string
		Signer                                      *string
		Revision                                    uint64
		Limits                                      *struct {
			Timeout     string
			MemoryBytes uint64 `json:"memory_bytes"`
			Concurrency int
		}
		Skills []struct{ ID string }
	}
	read := func() map[string]view {
		var doc struct{ Plugins []view }
		mustGetJSON(t, th, "", "/admin/plugins", &doc)
		out := map[string]view{}
		for _, p := range doc.Plugins {
			out[p.Name] = p
		}
		return out
	}
	// A plugin serves at once and is "loading" until its first compile,
	// which runs in the background, is done.
	if !waitFor(30*time.Second, func() bool { return read()["tools"].State == "loaded" }) {
		t.Fatalf("tools never loaded: %+v", read()["tools"])
	}
	got := read()
	tools, broken := got["tools"], got["broken"]
	if tools.State != "loaded" || tools.Version != "1.0.0" || tools.Source != "local" || tools.Signer != nil ||
		!strings.HasPrefix(tools.Digest, "sha256:") || len(tools.Digest) != len("sha256:")+64 || tools.Revision == 0 ||
		tools.Limits == nil || tools.Limits.Timeout != "10s" || tools.Limits.MemoryBytes != 16<<20 || tools.Limits.Concurrency != 4 ||
		len(tools.Skills) != 2 || tools.Error != "" {
		t.Errorf("tools = %+v", tools)
	}
	if broken.State != "failed" || !strings.Contains(broken.Error, "version: is required") || len(broken.Skills) != 0 {
		t.Errorf("broken = %+v", broken)
	}

	// A refused revision: tools keeps serving, with the refusal shown.
	mustPlugin(t, dir, "tools", strings.Replace(toolsManifest, "function: echo", "function: no_such_export", 1))
	if !waitFor(30*time.Second, func() bool { return strings.Contains(read()["tools"].Error, "no_such_export") }) {
		t.Fatalf("the refused revision is not shown: %+v", read()["tools"])
	}
	if v := read()["tools"]; v.State != "loaded" {
		t.Errorf("tools during the problem = %+v", v)
	}
	mustPlugin(t, dir, "tools", toolsManifest)
	if !waitFor(30*time.Second, func() bool { v := read()["tools"]; return v.State == "loaded" && v.Error == "" }) {
		t.Fatalf("the problem was not cleared: %+v", read()["tools"])
	}
}
