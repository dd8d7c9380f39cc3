package host_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/nats-io/nats.go"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
)

// mustEmbedded builds a host WithoutListener inside a real Fiber app on
// 127.0.0.1 that has routes of its own (GET /hello, GET /teapot failing
// with 418) and its own error handler; it returns the app's base URL.
func mustEmbedded(t *testing.T, mutate func(*config.Config)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.Listen = ln.Addr().String()
	cfg.Plugins = t.TempDir()
	cfg.Data = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	ctx := context.Background()
	h, err := host.New(ctx, cfg, host.WithoutListener(), host.WithLogger(quietLogger()))
	if err != nil {
		ln.Close()
		t.Fatalf("host.New: %v", err)
	}
	if h.Addr() != nil {
		t.Errorf("a host built WithoutListener listens on %v", h.Addr())
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ErrorHandler: func(c *fiber.Ctx, err error) error {
		var fe *fiber.Error
		errors.As(err, &fe)
		return c.Status(fe.Code).SendString("app: " + fe.Message)
	}})
	app.Get("/hello", func(c *fiber.Ctx) error { return c.SendString("hello") })
	app.Get("/teapot", func(*fiber.Ctx) error { return fiber.NewError(fiber.StatusTeapot, "short and stout") })
	app.Use(h.Handler())
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	t.Cleanup(func() {
		if err := app.ShutdownWithTimeout(10 * time.Second); err != nil {
			t.Errorf("app shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("app: %v", err)
		}
		if err := h.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// The host's Handler in the caller's Fiber app: the app's routes and error
// handler are its own, every other request gets the host's routes with the
// host's credentials, limits and error bodies, and the cards publish the
// app's address.
func TestHandlerInFiberApp(t *testing.T) {
	t.Parallel()
	key := newKey(t, "reader", "*")
	base := mustEmbedded(t, func(c *config.Config) {
		c.Auth.Keys = []config.AuthKey{key.Entry}
		c.HTTP.BodyLimit = 4 * config.KiB // below the app's own limit (4 MiB)
	})
	get := func(path string) (int, http.Header, string) {
		t.Helper()
		resp, b := mustGet(t, base+path)
		return resp.StatusCode, resp.Header, string(b)
	}
	if status, header, body := get("/hello"); status != 200 || body != "hello" || header.Get("X-Request-Id") != "" {
		t.Errorf("the app's route: %d %q (X-Request-Id %q): the host's middleware ran on it", status, body, header.Get("X-Request-Id"))
	}
	if status, _, body := get("/teapot"); status != http.StatusTeapot || body != "app: short and stout" {
		t.Errorf("the app's failing route: %d %q; want the app's own error handler", status, body)
	}
	if status, _, body := get("/health"); status != 200 || !strings.Contains(body, `"healthy"`) {
		t.Errorf("GET /health: %d %s", status, body)
	}
	status, _, body := get("/.well-known/agent-card.json")
	if status != 200 || !strings.Contains(body, `"url": "`+base+`/rpc"`) && !strings.Contains(body, base+"/rpc") {
		t.Errorf("the card does not publish the app's address %s: %d %s", base, status, body)
	}
	if status, _, _ := get("/no-such-route"); status != http.StatusNotFound {
		t.Errorf("a path neither serves: %d, want 404", status)
	}

	ctx := context.Background()
	rpc := func(key string, body []byte) httpReply {
		t.Helper()
		h := map[string]string{}
		if key != "" {
			h["Authorization"] = "Bearer " + key
		}
		r, err := send(ctx, httpClient, base+"/rpc", h, body)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	wantRefused(t, rpc("", rpcBody("_cleveragents/session/create", map[string]any{})), 401, -32105, "unauthenticated")
	if r := rpc(key.Secret, rpcBody("_cleveragents/session/create", map[string]any{})); r.Status != 200 || r.RPC.Error != nil {
		t.Errorf("session/create with the key: %d %s", r.Status, r.Body)
	}
	big := rpcBody("_cleveragents/session/create", map[string]any{"pad": strings.Repeat("x", 8<<10)})
	wantRefused(t, rpc(key.Secret, big), http.StatusRequestEntityTooLarge, -32600, "body_too_large")
}

// mustGet fetches url and returns the response with its body read.
func mustGet(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return resp, b
}

// WithPlugins serves an fs.FS as the plugin folder, counting each file
// before it copies it: a file over policy.max_module_bytes, or one that is
// not a regular file, refuses the start.
func TestWithPluginsCapsFiles(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(filepath.Join(fixtures, "hostile.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		wantErr string
	}{
		{"served", fstest.MapFS{"tools/plugin.yaml": {Data: []byte(toolsManifest)}, "tools/hostile.wasm": {Data: wasm}}, ""},
		{"file over the module cap", fstest.MapFS{"tools/plugin.yaml": {Data: []byte(toolsManifest)},
			"tools/hostile.wasm": {Data: wasm}, "tools/huge.bin": {Data: make([]byte, 64<<10+1)}}, "policy.max_module_bytes"},
		{"symlink", fstest.MapFS{"tools/plugin.yaml": {Data: []byte("/etc/passwd"), Mode: fs.ModeSymlink}}, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Defaults()
			cfg.Listen = "127.0.0.1:0"
			cfg.Data = t.TempDir()
			cfg.Plugins = filepath.Join(t.TempDir(), "not-read")
			cfg.Policy.MaxModuleBytes = 64 * config.KiB
			ctx := context.Background()
			h, err := host.New(ctx, cfg, host.WithPlugins(tt.fsys), host.WithLogger(quietLogger()))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("host.New = %v, want an error naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("host.New: %v", err)
			}
			defer h.Close(ctx)
			if _, err := os.Stat(cfg.Plugins); !os.IsNotExist(err) {
				t.Errorf("the plugin folder %s was made or read: %v", cfg.Plugins, err)
			}
			th := &testHost{URL: "http://" + h.Addr().String(), h: h}
			go h.Serve(ctx)
			out := th.mustResult(t, "_cleveragents/skill/execute", map[string]any{"session_id": th.mustSession(t),
				"skill_id": "echo", "skill_params": map[string]any{"text": "from the fs"}})
			if got, _ := out["output"].(map[string]any)["text"].(string); got != "from the fs" {
				t.Errorf("echo from the fs.FS plugin = %v", out)
			}
		})
	}
}

// WithNATS: the store uses the caller's connection and leaves it open; the
// host's own subscriptions on it end with Close.
func TestWithNATSLeavesTheConnection(t *testing.T) {
	t.Parallel()
	cluster := natstest.Start(t, 1)
	nc, err := nats.Connect(cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(); err != nil { // a request: nats.go's reply subscription now exists
		t.Fatal(err)
	}
	before := nc.NumSubscriptions()
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Data = t.TempDir()
	cfg.Plugins = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg, host.WithNATS(nc), host.WithLogger(quietLogger()))
	if err != nil {
		cancel()
		t.Fatalf("host.New: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx) }()
	th := &testHost{URL: "http://" + h.Addr().String(), h: h}
	th.mustSession(t)
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !nc.IsConnected() {
		t.Fatal("the host closed the caller's connection")
	}
	// The state is in the caller's JetStream.
	if _, err := js.KeyValue(store.SessionsBucket); err != nil {
		t.Errorf("no sessions bucket on the caller's server: %v", err)
	}
	if n := nc.NumSubscriptions(); n != before {
		t.Errorf("%d subscriptions left on the caller's connection after Close (%d before)", n, before)
	}
}
