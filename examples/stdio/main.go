// Command stdio runs skillhost in local mode — `skillhost serve --stdio`, as
// a child process — and talks framed JSON-RPC to it over its standard input
// and output: every message, both ways, is "<byte-length>\n<json>". It
// creates a session, stores and reads a context value, closes the session,
// then closes the child's stdin, which shuts the host down.
//
//	go build -o bin/skillhost ./cmd/skillhost
//	go run ./examples/stdio --skillhost bin/skillhost
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() {
	bin := flag.String("skillhost", "bin/skillhost", "path of the skillhost binary")
	plugins := flag.String("plugins", "plugins", "plugin folder the child serves")
	data := flag.String("data", "", "state directory of the child (default: a temporary directory, removed at exit)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := run(ctx, *bin, *plugins, *data, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stdio:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin, plugins, data string, out io.Writer) error {
	if data == "" {
		tmp, err := os.MkdirTemp("", "skillhost-stdio-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		data = tmp
	}
	cmd := exec.CommandContext(ctx, bin, "serve", "--stdio", "--plugins", plugins, "--data", data)
	cmd.Stderr = os.Stderr // the host logs to stderr; stdout carries frames only
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	c := &conn{w: stdin, r: bufio.NewReader(stdout)}
	runErr := session(c, out)
	// Closing stdin ends the host's stdio transport; with no HTTP listener
	// the host then shuts down and exits 0.
	_ = stdin.Close()
	waitErr := cmd.Wait()
	if runErr != nil {
		return runErr
	}
	if waitErr != nil {
		return fmt.Errorf("skillhost exited: %w", waitErr)
	}
	fmt.Fprintln(out, "host exited cleanly")
	return nil
}

// session is the conversation with the host.
func session(c *conn, out io.Writer) error {
	var created struct {
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
	}
	if err := c.call("_cleveragents/session/create", map[string]any{"agent_id": "stdio-example"}, &created); err != nil {
		return err
	}
	fmt.Fprintf(out, "session created: %s (%s)\n", created.SessionID, created.Status)
	if err := c.call("_cleveragents/context/set", map[string]any{
		"session_id": created.SessionID, "context_key": "mode", "value": "local",
	}, nil); err != nil {
		return err
	}
	var got struct {
		Value json.RawMessage `json:"value"`
	}
	if err := c.call("_cleveragents/context/get", map[string]any{"session_id": created.SessionID, "context_key": "mode"}, &got); err != nil {
		return err
	}
	fmt.Fprintf(out, "context mode = %s\n", got.Value)
	var closed struct {
		Status string `json:"status"`
	}
	if err := c.call("_cleveragents/session/close", map[string]any{"session_id": created.SessionID}, &closed); err != nil {
		return err
	}
	fmt.Fprintf(out, "session closed: %s (%s)\n", created.SessionID, closed.Status)
	// A closed session gates everything: the host answers -32100.
	err := c.call("_cleveragents/context/get", map[string]any{"session_id": created.SessionID, "context_key": "mode"}, nil)
	var rerr *rpcError
	if !errors.As(err, &rerr) {
		return fmt.Errorf("call on a closed session: got %v, want an error", err)
	}
	fmt.Fprintf(out, "call on the closed session: %d %s\n", rerr.Code, rerr.Data["reason"])
	return nil
}

// conn speaks framed JSON-RPC: "<byte-length>\n<json>" in both directions.
// Calls are sequential here, so each response is the next frame.
type conn struct {
	w    io.Writer
	r    *bufio.Reader
	next int
}

// maxFrame caps what is read from the host.
const maxFrame = 16 << 20

// rpcError is a JSON-RPC error object; data.reason is the machine-readable cause.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s %v", e.Code, e.Message, e.Data) }

func (c *conn) call(method string, params, result any) error {
	c.next++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c.w, "%d\n%s", len(body), body); err != nil {
		return fmt.Errorf("%s: write: %w", method, err)
	}
	frame, err := c.readFrame()
	if err != nil {
		return fmt.Errorf("%s: read: %w", method, err)
	}
	var msg struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(frame, &msg); err != nil {
		return fmt.Errorf("%s: response %q: %w", method, frame, err)
	}
	if msg.ID != c.next {
		return fmt.Errorf("%s: response id %d, want %d", method, msg.ID, c.next)
	}
	if msg.Error != nil {
		return fmt.Errorf("%s: %w", method, msg.Error)
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(msg.Result, result)
}

// readFrame reads "<byte-length>\n<json>", skipping blank lines between frames.
func (c *conn) readFrame() ([]byte, error) {
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		n, err := strconv.Atoi(line)
		if err != nil || n < 0 || n > maxFrame {
			return nil, fmt.Errorf("bad frame header %q", line)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(c.r, body); err != nil {
			return nil, err
		}
		return body, nil
	}
}
