package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host/client"
	"github.com/skillhost/skillhost/host/fault"
)

func newCallCmd() *cobra.Command {
	var to target
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "call [--url URL] METHOD [PARAMS-JSON]",
		Short: "Make one JSON-RPC call and pretty-print the result or error",
		Example: `  skillhost call --url http://127.0.0.1:8080 _cleveragents/session/create '{}'
  skillhost call --url http://127.0.0.1:8080 _cleveragents/skill/execute '{"session_id":"s1","skill_id":"uppercase","skill_params":{"text":"hi"}}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			to.resolve()
			if streamingMethods[args[0]] {
				return usagef("%s streams its result as Server-Sent Events; use an A2A client or curl -N", args[0])
			}
			endpoint, err := client.Endpoint(to.url)
			if err != nil {
				return usagef("--url %v", err)
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
			hc, err := to.httpClient()
			if err != nil {
				return err
			}
			doer := client.HTTP(endpoint, hc, client.WithAPIKey(to.apiKey))
			err = client.Call(ctx, func(ctx context.Context, body []byte) ([]byte, error) {
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
				return plainHTTP(err)
			}
			printJSON(cmd.OutOrStdout(), result)
			return nil
		},
	}
	to.flags(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "give up after this long")
	return cmd
}

// streamingMethods answer with Server-Sent Events, which `call` does not
// print; refusing them before sending avoids starting a task for nothing.
var streamingMethods = map[string]bool{
	"SendStreamingMessage": true, "SubscribeToTask": true, "message/stream": true, "tasks/resubscribe": true,
}

func printJSON(w io.Writer, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintln(w, v)
		return
	}
	fmt.Fprintln(w, string(b))
}
