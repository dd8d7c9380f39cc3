package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/jsonrpc"
)

func newCallCmd() *cobra.Command {
	var target string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "call --url URL METHOD [PARAMS-JSON]",
		Short: "Make one JSON-RPC call and pretty-print the result or error",
		Example: `  skillhost call --url http://127.0.0.1:8080 _cleveragents/session/create '{}'
  skillhost call --url http://127.0.0.1:8080 _cleveragents/skill/execute '{"session_id":"s1","skill_id":"uppercase","skill_params":{"text":"hi"}}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if target == "" {
				return usagef("--url is required")
			}
			if streamingMethods[args[0]] {
				return usagef("%s streams its result as Server-Sent Events; use an A2A client or curl -N", args[0])
			}
			endpoint, err := rpcURL(target)
			if err != nil {
				return usageError{err}
			}
			var params any
			if len(args) == 2 {
				var raw json.RawMessage
				if err := json.Unmarshal([]byte(args[1]), &raw); err != nil {
					return usagef("PARAMS-JSON is not valid JSON: %v", err)
				}
				params = raw
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			var result json.RawMessage
			var raw []byte // the response as received, to print an error unchanged
			doer := httpDoer(endpoint)
			err = jsonrpc.Call(ctx, func(ctx context.Context, body []byte) ([]byte, error) {
				out, err := doer(ctx, body)
				raw = out
				return out, err
			}, args[0], params, &result)
			var fe *fault.Error
			if errors.As(err, &fe) { // the host answered with a JSON-RPC error
				var resp struct {
					Error json.RawMessage `json:"error"`
				}
				_ = json.Unmarshal(raw, &resp)
				printJSON(cmd.OutOrStdout(), resp.Error)
				return fmt.Errorf("%s: %d %s (reason %s)", args[0], fe.Kind.Code(), fe.Message(), fe.Reason)
			}
			if err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), result)
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "url", "", "host base URL (http://127.0.0.1:8080) or its /rpc endpoint")
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "give up after this long")
	return cmd
}

// streamingMethods answer with Server-Sent Events, which `call` does not
// print; refusing them before sending avoids starting a task for nothing.
var streamingMethods = map[string]bool{
	"SendStreamingMessage": true, "SubscribeToTask": true, "message/stream": true, "tasks/resubscribe": true,
}

// rpcURL accepts a base URL or a full endpoint URL; a bare base gets /rpc.
func rpcURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--url %q is not an http(s) URL", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/rpc"
	}
	return u.String(), nil
}

// httpDoer posts one JSON-RPC body and returns the response body.
func httpDoer(endpoint string) func(context.Context, []byte) ([]byte, error) {
	return func(ctx context.Context, body []byte) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err // *url.Error already names the method and URL
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return nil, fmt.Errorf("POST %s: reading response: %w", endpoint, err)
		}
		if len(bytes.TrimSpace(out)) == 0 {
			return nil, fmt.Errorf("POST %s: HTTP %d with an empty body", endpoint, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
			return nil, fmt.Errorf("POST %s: HTTP %d, unexpected content type %q", endpoint, resp.StatusCode, ct)
		}
		return out, nil
	}
}

func printJSON(w io.Writer, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintln(w, v)
		return
	}
	fmt.Fprintln(w, string(b))
}
