// Command misbehaving calls every skill of the plugins in
// examples/misbehaving/plugins at once — an endless loop, a memory hog, an
// 8 MiB output, two traps, a plugin-reported error and an endless
// initialiser — while a well-behaved neighbour keeps being called. It prints
// the JSON-RPC error code and machine-readable reason the host returned for
// each, then shows the host still serving.
//
//	skillhost serve --plugins examples/misbehaving/plugins --data /tmp/sh-data &
//	go run ./examples/misbehaving --url http://127.0.0.1:8080
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"
)

// calls are the misbehaving skills, in the order they are reported.
var calls = []struct{ plugin, skill string }{
	{"looper", "infinite-loop"},
	{"slow-starter", "never-ready"},
	{"memory-hog", "eat-memory"},
	{"chatterbox", "huge-output"},
	{"crasher", "crash"},
	{"crasher", "stack-overflow"},
	{"complainer", "complain"},
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "base URL of a host serving examples/misbehaving/plugins")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *url+"/rpc", os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "misbehaving:", err)
		os.Exit(1)
	}
}

// outcome is what one call returned.
type outcome struct {
	code   int
	reason string
	took   time.Duration
	err    error
}

func run(ctx context.Context, url string, out io.Writer) error {
	c := &http.Client{Timeout: 60 * time.Second}
	var sess struct {
		SessionID string `json:"session_id"`
	}
	if _, err := call(ctx, c, url, "_cleveragents/session/create", map[string]any{}, &sess); err != nil {
		return err
	}
	execute := func(ctx context.Context, skill string, params any) (*rpcError, error) {
		return call(ctx, c, url, "_cleveragents/skill/execute", map[string]any{
			"session_id": sess.SessionID, "skill_id": skill, "skill_params": params,
		}, nil)
	}

	// The neighbour: polite-echo in a loop for as long as the hostile calls run.
	stop := make(chan struct{})
	var served, failed atomic.Int64
	var neighbour sync.WaitGroup
	neighbour.Add(1)
	go func() {
		defer neighbour.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if rerr, err := execute(ctx, "polite-echo", map[string]any{"still": "serving"}); err != nil || rerr != nil {
				failed.Add(1)
			} else {
				served.Add(1)
			}
		}
	}()

	results := make([]outcome, len(calls))
	var wg sync.WaitGroup
	for i, cl := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			rerr, err := execute(ctx, cl.skill, map[string]any{})
			results[i] = outcome{took: time.Since(start), err: err}
			if rerr != nil {
				results[i].code, results[i].reason = rerr.Code, rerr.reason()
			}
		}()
	}
	wg.Wait()
	close(stop)
	neighbour.Wait()

	for i, cl := range calls {
		r := results[i]
		name := cl.plugin + "/" + cl.skill
		switch {
		case r.err != nil:
			fmt.Fprintf(out, "%-28s transport error: %v\n", name, r.err)
		case r.code == 0:
			fmt.Fprintf(out, "%-28s unexpectedly succeeded\n", name)
		default:
			fmt.Fprintf(out, "%-28s %d %-13s (%d ms)\n", name, r.code, r.reason, r.took.Milliseconds())
		}
	}
	fmt.Fprintf(out, "polite/polite-echo served %d calls meanwhile, %d failed\n", served.Load(), failed.Load())

	// Every plugin instance that misbehaved was discarded; the host, and
	// the misbehaving plugins themselves, keep serving.
	if rerr, err := execute(ctx, "polite-echo", map[string]any{"after": "the storm"}); err != nil || rerr != nil {
		return fmt.Errorf("the host stopped serving: %v %v", err, rerr)
	}
	fmt.Fprintln(out, "host still serving: yes")
	_, err := call(ctx, c, url, "_cleveragents/session/close", map[string]any{"session_id": sess.SessionID}, nil)
	return err
}

// rpcError is a JSON-RPC error object; data.reason is the machine-readable cause.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

func (e *rpcError) reason() string {
	r, _ := e.Data["reason"].(string)
	return r
}

// call makes one JSON-RPC call. A JSON-RPC error is returned as *rpcError
// (with a nil error); transport and decoding problems as an error.
func call(ctx context.Context, c *http.Client, url, method string, params, result any) (*rpcError, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&msg); err != nil {
		return nil, fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	if msg.Error != nil {
		if result != nil {
			return msg.Error, fmt.Errorf("%s: %d %s %v", method, msg.Error.Code, msg.Error.Message, msg.Error.Data)
		}
		return msg.Error, nil
	}
	if result != nil {
		return nil, json.Unmarshal(msg.Result, result)
	}
	return nil, nil
}
