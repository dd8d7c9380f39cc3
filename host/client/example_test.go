package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/client"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
)

// startHost serves an empty plugin folder on a free loopback port and
// returns its base URL and a function that stops it.
func startHost() (url string, stop func()) {
	dir, _ := os.MkdirTemp("", "skillhost-client-example-")
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Plugins, cfg.Data = filepath.Join(dir, "plugins"), filepath.Join(dir, "data")
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg, host.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx) }()
	return "http://" + h.Addr().String(), func() { cancel(); <-served; os.RemoveAll(dir) }
}

// Calling a skillhost: a result decodes into a value; an error response is
// a *fault.Error to switch on, with the host's kind and reason.
func ExampleCall() {
	base, stop := startHost()
	defer stop()
	ctx := context.Background()

	endpoint, _ := client.Endpoint(base) // http://host:port → http://host:port/rpc
	rpc := client.HTTP(endpoint, nil)

	var created struct {
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
	}
	err := client.Call(ctx, rpc, "_cleveragents/session/create", map[string]any{"session_id": "s1"}, &created)
	fmt.Println(created.SessionID, created.Status, err)

	err = client.Call(ctx, rpc, "_cleveragents/context/get", map[string]any{"session_id": "nope", "context_key": "k"}, nil)
	var fe *fault.Error
	if errors.As(err, &fe) {
		fmt.Println(fe.Kind.Code(), fe.Kind, fe.Reason, errors.Is(err, fault.ErrSessionNotFound))
	}
	// Output:
	// s1 active <nil>
	// -32100 SessionNotFound session_not_found true
}
