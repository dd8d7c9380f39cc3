package bench

import (
	"context"
	"iter"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// A2ANative is the baseline of P3: the official a2a-go v2 server (its
// JSON-RPC transport on net/http, its in-memory task store, nothing
// durable) with a native executor that does what skillhost does for an echo
// skill: submitted, working, the input's first part returned as the output
// artifact, completed.
func A2ANative() http.Handler {
	handler := a2asrv.NewHandler(echoExecutor{})
	mux := http.NewServeMux()
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(handler))
	return mux
}

// echoExecutor is the native executor of A2ANative.
type echoExecutor struct{}

var _ a2asrv.AgentExecutor = echoExecutor{}

func (echoExecutor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		var out *a2a.Part
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			out = ec.Message.Parts[0]
		} else {
			out = a2a.NewDataPart(map[string]any{})
		}
		art := a2a.NewArtifactEvent(ec, out)
		art.Artifact.Name = "output"
		art.LastChunk = true
		if !yield(art, nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (echoExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}
