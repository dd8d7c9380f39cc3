package host_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// progressAgent is an agent written with the official a2a-go v2 server SDK
// whose skill "work" reports progress the way a skillhost peer does (a
// working update with a text part and a data part {percent}) before it
// completes with the artifact {"done": true}.
type progressAgent struct{}

func (progressAgent) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		for _, step := range []struct {
			text    string
			percent float64
		}{{"peer: reading the ledger", 40}, {"peer: charging the card", 80}} {
			msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(step.text),
				a2a.NewDataPart(map[string]any{"percent": step.percent}))
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg), nil) {
				return
			}
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewDataPart(map[string]any{"done": true})), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (progressAgent) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// TestRemoteProgressForwarded: a skill on host A calls a remote A2A peer
// through agent_call while it runs as an A2A task; the peer (a2a-go's
// server SDK, streaming) reports progress, and the caller streaming the
// task on host A sees that progress as the task's own working updates,
// then the peer's result.
func TestRemoteProgressForwarded(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	peer := httptest.NewServer(mux)
	t.Cleanup(peer.Close)
	card := &a2a.AgentCard{Name: "ledger", Description: "a2a-go v2 agent that reports progress", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(peer.URL+"/a2a", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"application/json"}, DefaultOutputModes: []string{"application/json"},
		Capabilities: a2a.AgentCapabilities{Streaming: true},
		Skills:       []a2a.AgentSkill{{ID: "work", Name: "Work", Description: "works in steps", Tags: []string{"demo"}}}}
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(progressAgent{})))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))

	dir := t.TempDir()
	mustPluginWasm(t, dir, "ask", "relay.wasm", relayManifest("ask", "ask-ledger", "ledger", "work", "ledger"))
	a, _ := mustHostWith(t, dir, func(c *config.Config) {
		allowAgents(c)
		ledger := remoteAgent("ledger", peer.URL)
		ledger.Agent = ""
		c.Agents.Remote = []config.RemoteAgent{ledger}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(ctx, t, a.URL, a2a.TransportProtocolJSONRPC)
	var progress []string
	var final *a2a.TaskStatusUpdateEvent
	var output any
	for ev, err := range cl.SendStreamingMessage(ctx, message("ask-ledger", map[string]any{"cents": 5})) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
		switch e := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			if e.Status.State == a2a.TaskStateWorking && e.Status.Message != nil {
				var text []string
				for _, p := range e.Status.Message.Parts {
					if p.Text() != "" {
						text = append(text, p.Text())
					}
					if d, ok := p.Data().(map[string]any); ok {
						text = append(text, fmt.Sprint("percent ", d["percent"]))
					}
				}
				progress = append(progress, strings.Join(text, " "))
			}
			final = e
		case *a2a.TaskArtifactUpdateEvent:
			output = e.Artifact.Parts[0].Data()
		}
	}
	want := []string{"peer: reading the ledger percent 40", "peer: charging the card percent 80"}
	if diff := cmp.Diff(want, progress); diff != "" {
		t.Errorf("progress on host A's task (-want +got):\n%s", diff)
	}
	if final == nil || final.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("final status %+v, want completed", final)
	}
	env, _ := output.(map[string]any)
	if res, _ := env["result"].(map[string]any); env["ok"] != true || !cmp.Equal(map[string]any{"done": true}, res["result"]) {
		t.Errorf("output %v, want agent_call's envelope around the peer's {done: true}", output)
	}
}
