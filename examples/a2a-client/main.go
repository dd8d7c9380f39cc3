// Command a2a-client discovers a skillhost through its Agent Card and calls
// one of its skills with the official A2A Go client (a2a-go v2): the skill is
// chosen by message.metadata.skillId, the JSON input travels as a data part
// and the output comes back as a task artifact.
//
//	go run ./examples/a2a-client --url http://127.0.0.1:8080 --skill echo --input '{"message":"hi"}'
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "base URL of the host (its card is at /.well-known/agent-card.json)")
	skill := flag.String("skill", "echo", "skill id to call")
	input := flag.String("input", `{"message":"hello over A2A"}`, "JSON object passed to the skill")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run(ctx, *url, *skill, *input, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "a2a-client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, skill, input string, out io.Writer) error {
	var data map[string]any
	if err := json.Unmarshal([]byte(input), &data); err != nil {
		return fmt.Errorf("--input must be a JSON object: %w", err)
	}
	card, err := agentcard.DefaultResolver.Resolve(ctx, url)
	if err != nil {
		return fmt.Errorf("read the agent card: %w", err)
	}
	fmt.Fprintf(out, "agent: %s (%d skills)\n", card.Name, len(card.Skills))
	for _, s := range card.Skills {
		fmt.Fprintf(out, "  skill %s: %s\n", s.ID, s.Description)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		return fmt.Errorf("client from card: %w", err)
	}
	defer client.Destroy()

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(data))
	msg.Metadata = map[string]any{"skillId": skill}
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		return fmt.Errorf("SendMessage: %w", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		return fmt.Errorf("SendMessage returned a %T, want a task", res)
	}
	fmt.Fprintf(out, "task %s: %s\n", task.ID, task.Status.State)
	for _, art := range task.Artifacts {
		for _, p := range art.Parts {
			b, err := json.Marshal(p.Data())
			if p.Data() == nil {
				b, err = []byte(fmt.Sprintf("%q", p.Text())), nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "artifact: %s\n", b)
		}
	}
	if task.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("task ended %s", task.Status.State)
	}
	return nil
}
