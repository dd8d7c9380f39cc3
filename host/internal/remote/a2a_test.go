package remote_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/remote"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// sdkAgent is an agent written with the official a2a-go v2 server SDK: its
// "sum" skill adds the numbers of its data part; "fail" fails the task;
// anything else is rejected.
type sdkAgent struct {
	mu     sync.Mutex
	depths []string
}

func (a *sdkAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.mu.Lock()
		if ec.ServiceParams != nil {
			if v, ok := ec.ServiceParams.Get(remote.DepthHeader); ok && len(v) > 0 {
				a.depths = append(a.depths, v[0])
			}
		}
		a.mu.Unlock()
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		skill, _ := ec.Message.Metadata["skillId"].(string)
		switch skill {
		case "sum":
			var in struct{ Numbers []float64 }
			for _, p := range ec.Message.Parts {
				b, _ := json.Marshal(p.Data())
				_ = json.Unmarshal(b, &in)
			}
			sum := 0.0
			for _, n := range in.Numbers {
				sum += n
			}
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewDataPart(map[string]any{"sum": sum})), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		case "fail":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("it broke"))), nil)
		default:
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateRejected, a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("no such skill"))), nil)
		}
	}
}

func (a *sdkAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// newSDKPeer serves an sdkAgent over JSON-RPC at version (1.0 or 0.3 via
// a2a-go's compat handler) with its card at the well-known path.
func newSDKPeer(t *testing.T, agent *sdkAgent) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{
		Name: "sdk-agent", Description: "an a2a-go v2 agent", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/a2a", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"application/json"}, DefaultOutputModes: []string{"application/json"},
		Skills: []a2a.AgentSkill{{ID: "sum", Name: "Sum", Description: "adds numbers", Tags: []string{"math"}}},
	}
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(agent)))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	return srv
}

// TestA2APeer: a peer without skillhost's extension is called with A2A
// SendMessage (skill in metadata.skillId) through the a2a-go client: a
// completed task's artifact is the output, a failed task is a final
// skill failure, a rejected one invalid params.
func TestA2APeer(t *testing.T) {
	t.Parallel()
	agent := &sdkAgent{}
	srv := newSDKPeer(t, agent)
	ps := mustPeers(t, nil, nil, peerConfig("sdk", srv.URL))
	res, err := ps.Call(callCtx(t), remote.Call{ID: "sdk", Method: "sum", Input: json.RawMessage(`{"numbers":[1,2,3.5]}`), Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `{"sum":6.5}` || res.Interface.Extension || res.Interface.Version != "1.0" {
		t.Errorf("result = %s over %+v, want {\"sum\":6.5} over A2A 1.0", res.Output, res.Interface)
	}
	var task a2a.Task
	if err := json.Unmarshal(res.Raw, &task); err != nil || task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("raw = %s, want the completed task", res.Raw)
	}
	agent.mu.Lock()
	if len(agent.depths) != 1 || agent.depths[0] != "2" {
		t.Errorf("depth headers seen = %v, want [2]", agent.depths)
	}
	agent.mu.Unlock()

	_, err = ps.Call(callCtx(t), remote.Call{ID: "sdk", Method: "fail"})
	testutil.MustFault(t, err, fault.SkillFailed, fault.ReasonSkillFailed)
	if remote.Fallible(err) {
		t.Error("a failed task let a fallback be tried")
	}
	_, err = ps.Call(callCtx(t), remote.Call{ID: "sdk", Method: "nope"})
	testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonInvalidParams)
}
