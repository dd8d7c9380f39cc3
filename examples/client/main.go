// Command client calls a running skillhost over HTTP with plain net/http
// JSON-RPC: it creates a session, stores and reads a context value, runs a
// skill with _cleveragents/skill/execute, calls the same skill through
// _cleveragents/agent/call, and closes the session.
//
//	go run ./examples/client --url http://127.0.0.1:8080
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "base URL of the host")
	skill := flag.String("skill", "echo", "skill to run with skill/execute")
	agent := flag.String("agent", "echo", "agent (plugin name) to call with agent/call")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, &client{url: *url + "/rpc", http: &http.Client{Timeout: 30 * time.Second}}, *skill, *agent, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *client, skill, agent string, out io.Writer) error {
	var sess struct {
		SessionID string `json:"session_id"`
	}
	if err := c.call(ctx, "_cleveragents/session/create", map[string]any{"agent_id": "example-client"}, &sess); err != nil {
		return err
	}
	fmt.Fprintln(out, "session created:", sess.SessionID)
	// Close the session whatever happens next.
	defer func() {
		if err := c.call(context.WithoutCancel(ctx), "_cleveragents/session/close", map[string]any{"session_id": sess.SessionID}, nil); err == nil {
			fmt.Fprintln(out, "session closed:", sess.SessionID)
		}
	}()

	if err := c.call(ctx, "_cleveragents/context/set", map[string]any{
		"session_id": sess.SessionID, "context_key": "greeting", "value": "hello from the client", "ttl": 3600,
	}, nil); err != nil {
		return err
	}
	var got struct {
		Value json.RawMessage `json:"value"`
	}
	if err := c.call(ctx, "_cleveragents/context/get", map[string]any{"session_id": sess.SessionID, "context_key": "greeting"}, &got); err != nil {
		return err
	}
	fmt.Fprintf(out, "context greeting = %s\n", got.Value)

	var exec struct {
		Output          json.RawMessage `json:"output"`
		ExecutionTimeMS int64           `json:"execution_time_ms"`
		Accounting      struct {
			Plugin        string `json:"plugin"`
			PluginVersion string `json:"plugin_version"`
		} `json:"accounting"`
	}
	if err := c.call(ctx, "_cleveragents/skill/execute", map[string]any{
		"session_id": sess.SessionID, "skill_id": skill, "skill_params": map[string]any{"message": "hello"}, "timeout": 5000,
	}, &exec); err != nil {
		return err
	}
	fmt.Fprintf(out, "skill/execute %s -> %s (plugin %s@%s, %d ms)\n", skill, exec.Output, exec.Accounting.Plugin, exec.Accounting.PluginVersion, exec.ExecutionTimeMS)

	var ag struct {
		Result json.RawMessage `json:"result"`
	}
	if err := c.call(ctx, "_cleveragents/agent/call", map[string]any{
		"session_id": sess.SessionID, "target_agent_id": agent, "method": skill, "params": map[string]any{"message": "hi, agent"},
	}, &ag); err != nil {
		return err
	}
	fmt.Fprintf(out, "agent/call %s.%s -> %s\n", agent, skill, ag.Result)
	return nil
}

// client is a minimal JSON-RPC 2.0 client over HTTP POST.
type client struct {
	url  string
	http *http.Client
	next int
}

// rpcError is a JSON-RPC error; data.reason is the machine-readable cause.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s %s", e.Code, e.Message, e.Data) }

// call sends one request and decodes its result into result (when not nil).
func (c *client) call(ctx context.Context, method string, params, result any) error {
	c.next++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&msg); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	if msg.Error != nil {
		return fmt.Errorf("%s: %w", method, msg.Error)
	}
	if result == nil {
		return nil
	}
	if len(msg.Result) == 0 {
		return errors.New(method + ": response has neither result nor error")
	}
	return json.Unmarshal(msg.Result, result)
}
