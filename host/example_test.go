package host_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

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
