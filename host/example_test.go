package host_test

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/client"
	"github.com/skillhost/skillhost/host/config"
)

// Embedding a host: configure it, start it on a free loopback port, call it
// with the JSON-RPC client, and stop it by ending Serve's context.
func Example() {
	dir, _ := os.MkdirTemp("", "skillhost-example-")
	defer os.RemoveAll(dir)

	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0" // any free port
	cfg.Plugins = filepath.Join(dir, "plugins")
	cfg.Data = filepath.Join(dir, "data")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h, err := host.New(ctx, cfg, host.WithVersion("1.0.0"), host.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx) }() // Serve closes the host when ctx ends

	rpc := client.HTTP("http://"+h.Addr().String()+"/rpc", nil)
	var session struct {
		Status string `json:"status"`
	}
	err = client.Call(ctx, rpc, "_cleveragents/session/create", map[string]any{"session_id": "demo"}, &session)
	fmt.Println(session.Status, err)

	stop()
	fmt.Println(<-served)
	// Output:
	// active <nil>
	// <nil>
}

// The Agent Card a host with cfg would serve, without starting it.
func ExampleCard() {
	dir, _ := os.MkdirTemp("", "skillhost-example-")
	defer os.RemoveAll(dir)

	cfg := config.Defaults()
	cfg.Plugins = dir // no plugins yet: a card with no skills
	card, problems, err := host.Card(context.Background(), cfg, host.CardOptions{Version: "1.0.0"})
	fmt.Println(len(card) > 0, problems, err)
	// Output: true [] <nil>
}

// plugins are plugin folders compiled into the program: testdata/embedded
// holds echo/plugin.yaml and echo/echo.wasm.
//
//go:embed testdata/embedded
var plugins embed.FS

// Plugins compiled into the program: WithPlugins serves the folders of an
// fs.FS (here an embed.FS) as the plugin folder, under the same policy.
func ExampleWithPlugins() {
	dir, _ := os.MkdirTemp("", "skillhost-example-")
	defer os.RemoveAll(dir)
	fsys, _ := fs.Sub(plugins, "testdata/embedded") // one folder per plugin

	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Data = filepath.Join(dir, "data")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h, err := host.New(ctx, cfg, host.WithPlugins(fsys), host.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx) }()

	rpc := client.HTTP("http://"+h.Addr().String()+"/rpc", nil)
	_ = client.Call(ctx, rpc, "_cleveragents/session/create", map[string]any{"session_id": "s1"}, nil)
	var res struct {
		Output map[string]string `json:"output"`
	}
	err = client.Call(ctx, rpc, "_cleveragents/skill/execute",
		map[string]any{"session_id": "s1", "skill_id": "echo", "skill_params": map[string]string{"say": "hi"}}, &res)
	fmt.Println(res.Output["say"], err)
	stop()
	fmt.Println(<-served)
	// Output:
	// hi <nil>
	// <nil>
}

// The host inside your own Fiber app: built WithoutListener, it answers
// every request the app's own routes do not (/rpc, /a2a/…, the Agent Cards,
// /health, …); the app listens on cfg.Listen.
func ExampleHost_Handler() {
	dir, _ := os.MkdirTemp("", "skillhost-example-")
	defer os.RemoveAll(dir)
	ln, _ := net.Listen("tcp", "127.0.0.1:0") // the app's listener

	cfg := config.Defaults()
	cfg.Listen = ln.Addr().String() // where the app listens: the cards publish it
	cfg.Plugins = filepath.Join(dir, "plugins")
	cfg.Data = filepath.Join(dir, "data")
	ctx := context.Background()
	h, err := host.New(ctx, cfg, host.WithoutListener(), host.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)

	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/hello", func(c *fiber.Ctx) error { return c.SendString("hello from the app") })
	app.Use(h.Handler()) // after the app's own routes
	go app.Listener(ln)
	defer app.Shutdown()

	base := "http://" + ln.Addr().String()
	resp, _ := http.Get(base + "/hello")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	var session struct {
		Status string `json:"status"`
	}
	err = client.Call(ctx, client.HTTP(base+"/rpc", nil), "_cleveragents/session/create", map[string]any{"session_id": "demo"}, &session)
	fmt.Println(session.Status, err)
	// Output:
	// hello from the app
	// active <nil>
}

// A host on your program's own NATS connection: the state store uses it
// (JetStream on the server it reaches) and never closes it.
func ExampleWithNATS() {
	dir, _ := os.MkdirTemp("", "skillhost-example-")
	defer os.RemoveAll(dir)
	srv, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "nats")})
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		fmt.Println("nats did not start")
		return
	}
	nc, _ := nats.Connect(srv.ClientURL())
	defer nc.Close()

	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Plugins = filepath.Join(dir, "plugins")
	cfg.Data = filepath.Join(dir, "data")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h, err := host.New(ctx, cfg, host.WithNATS(nc), host.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx) }()
	var session struct {
		Status string `json:"status"`
	}
	err = client.Call(ctx, client.HTTP("http://"+h.Addr().String()+"/rpc", nil), "_cleveragents/session/create",
		map[string]any{"session_id": "demo"}, &session)
	fmt.Println(session.Status, err)
	stop()
	fmt.Println(<-served, nc.IsConnected()) // the connection is still the program's
	// Output:
	// active <nil>
	// <nil> true
}
