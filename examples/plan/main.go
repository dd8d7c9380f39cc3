// Command plan runs a plan on a running skillhost over HTTP JSON-RPC: it
// creates a session, creates the plan read from --plan, executes it (steps
// in parallel unless --parallel=false, with the input read from --input),
// polls _cleveragents/plan/status and prints a line whenever the progress
// changes, then prints the final status and result.
//
//	go run ./examples/plan --url http://127.0.0.1:8080 --plan examples/plan/plan.json --input examples/plan/input.json
//
// It exits 1 when the plan fails or is cancelled (printing the error).
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
	"strings"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "base URL of the host")
	planFile := flag.String("plan", "examples/plan/plan.json", "plan definition file (JSON)")
	inputFile := flag.String("input", "", "plan input file (JSON), read by ${plan.input…} references")
	parallel := flag.Bool("parallel", true, "run every step whose dependencies are done at once")
	interval := flag.Duration("interval", 100*time.Millisecond, "status polling interval")
	timeout := flag.Duration("timeout", 5*time.Minute, "whole-plan timeout sent with plan/execute")
	flag.Parse()
	def, err := os.ReadFile(*planFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "plan:", err)
		os.Exit(2)
	}
	var input json.RawMessage
	if *inputFile != "" {
		if input, err = os.ReadFile(*inputFile); err != nil {
			fmt.Fprintln(os.Stderr, "plan:", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := &client{url: *url + "/rpc", http: &http.Client{Timeout: 30 * time.Second}}
	opts := options{input: input, parallel: *parallel, interval: *interval, timeout: *timeout}
	if err := run(ctx, c, def, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "plan:", err)
		os.Exit(1)
	}
}

// options are how the plan is executed and watched.
type options struct {
	input    json.RawMessage
	parallel bool
	interval time.Duration
	timeout  time.Duration
}

type status struct {
	Status   string `json:"status"`
	Progress struct {
		TotalSteps     int      `json:"total_steps"`
		CompletedSteps int      `json:"completed_steps"`
		RunningSteps   []string `json:"running_steps"`
	} `json:"progress"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

func run(ctx context.Context, c *client, def json.RawMessage, opts options, out io.Writer) error {
	var sess struct {
		SessionID string `json:"session_id"`
	}
	if err := c.call(ctx, "_cleveragents/session/create", map[string]any{"agent_id": "example-plan"}, &sess); err != nil {
		return err
	}
	fmt.Fprintln(out, "session:", sess.SessionID)
	var created struct {
		PlanID     string `json:"plan_id"`
		Name       string `json:"name"`
		TotalSteps int    `json:"total_steps"`
	}
	if err := c.call(ctx, "_cleveragents/plan/create", map[string]any{
		"session_id": sess.SessionID, "plan_definition": def, "metadata": map[string]any{"source": "examples/plan"},
	}, &created); err != nil {
		return err
	}
	fmt.Fprintf(out, "plan %s created: %q, %d steps\n", created.PlanID, created.Name, created.TotalSteps)
	var started struct {
		ExecutionID string `json:"execution_id"`
	}
	params := map[string]any{
		"session_id": sess.SessionID, "plan_id": created.PlanID,
		"execution_options": map[string]any{"parallel": opts.parallel, "timeout": opts.timeout.Milliseconds()},
	}
	if len(opts.input) > 0 {
		params["input"] = opts.input
	}
	if err := c.call(ctx, "_cleveragents/plan/execute", params, &started); err != nil {
		return err
	}
	fmt.Fprintln(out, "executing:", started.ExecutionID)
	last := ""
	for {
		var st status
		if err := c.call(ctx, "_cleveragents/plan/status", map[string]any{"session_id": sess.SessionID, "plan_id": created.PlanID}, &st); err != nil {
			return err
		}
		line := fmt.Sprintf("progress: %d/%d", st.Progress.CompletedSteps, st.Progress.TotalSteps)
		if len(st.Progress.RunningSteps) > 0 {
			line += " running " + strings.Join(st.Progress.RunningSteps, ", ")
		}
		if line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		switch st.Status {
		case "executing":
		case "completed":
			fmt.Fprintln(out, "completed")
			fmt.Fprintf(out, "result: %s\n", compact(st.Result))
			return nil
		default:
			if st.Error != nil {
				return fmt.Errorf("plan %s: %s (code %d, step %v, reason %v)", st.Status, st.Error.Message, st.Error.Code,
					st.Error.Details["step_id"], st.Error.Details["reason"])
			}
			return fmt.Errorf("plan %s", st.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opts.interval):
		}
	}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// client is a minimal JSON-RPC 2.0 client over HTTP.
type client struct {
	url  string
	http *http.Client
	seq  int
}

type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("%d %s (reason %v)", e.Code, e.Message, e.Data["reason"])
}

func (c *client) call(ctx context.Context, method string, params, result any) error {
	c.seq++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.seq, "method": method, "params": params})
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
	var reply struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&reply); err != nil {
		return fmt.Errorf("%s: decode reply (HTTP %d): %w", method, resp.StatusCode, err)
	}
	if reply.Error != nil {
		return fmt.Errorf("%s: %w", method, reply.Error)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Result, result); err != nil {
		return errors.Join(fmt.Errorf("%s: decode result", method), err)
	}
	return nil
}
