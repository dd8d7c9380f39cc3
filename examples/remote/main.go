// Command remote shows agents calling agents across two hosts. Host A's
// ask-b skill calls host B's echo skill through the agent_call host function,
// and _cleveragents/agent/call on host A reaches the same agent of host B
// (host A's remote agent b-echo). When host B cannot answer, host A's own
// local-echo plugin answers as b-echo's fallback, and the output says so.
//
//	go run ./examples/remote --url http://127.0.0.1:8081
package main

import (
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

	"github.com/skillhost/skillhost/host/client"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8081", "base URL of host A")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rpc := client.HTTP(*url+"/rpc", &http.Client{Timeout: time.Minute})
	if err := run(ctx, rpc, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "remote:", err)
		os.Exit(1)
	}
}

// answer is the part of agent/call's result (and of agent_call's reply) that
// says who answered.
type answer struct {
	AgentID      string          `json:"agent_id"`
	FallbackFrom string          `json:"fallback_from"`
	Result       json.RawMessage `json:"result"`
}

// String is the result and the agent that answered it.
func (a answer) String() string {
	if a.FallbackFrom != "" {
		return fmt.Sprintf("%s (answered by %s, the fallback for %s)", a.Result, a.AgentID, a.FallbackFrom)
	}
	return fmt.Sprintf("%s (answered by %s)", a.Result, a.AgentID)
}

func run(ctx context.Context, rpc client.Doer, out io.Writer) error {
	var sess struct {
		SessionID string `json:"session_id"`
	}
	if err := client.Call(ctx, rpc, "_cleveragents/session/create", map[string]any{"agent_id": "example-remote"}, &sess); err != nil {
		return err
	}
	defer func() { // close the session whatever happens next
		_ = client.Call(context.WithoutCancel(ctx), rpc, "_cleveragents/session/close", map[string]any{"session_id": sess.SessionID}, nil)
	}()

	// A skill on host A calls a skill on host B: ask-b's output is
	// agent_call's reply.
	var exec struct {
		Output struct {
			OK     bool   `json:"ok"`
			Result answer `json:"result"`
			Error  *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"output"`
	}
	if err := client.Call(ctx, rpc, "_cleveragents/skill/execute", map[string]any{
		"session_id": sess.SessionID, "skill_id": "ask-b", "skill_params": map[string]any{"message": "hello from host A"},
	}, &exec); err != nil {
		return err
	}
	if !exec.Output.OK {
		if e := exec.Output.Error; e != nil {
			return fmt.Errorf("ask-b: agent_call failed: %s %s", e.Code, e.Message)
		}
		return errors.New("ask-b: agent_call answered neither a result nor an error")
	}
	fmt.Fprintf(out, "skill ask-b on host A, agent_call b-echo.echo -> %s\n", exec.Output.Result)

	// A client calls host B's agent through host A.
	var call answer
	if err := client.Call(ctx, rpc, "_cleveragents/agent/call", map[string]any{
		"session_id": sess.SessionID, "target_agent_id": "b-echo", "method": "echo", "params": map[string]any{"message": "hi, host B"},
	}, &call); err != nil {
		return err
	}
	fmt.Fprintf(out, "agent/call b-echo.echo on host A -> %s\n", call)
	return nil
}
