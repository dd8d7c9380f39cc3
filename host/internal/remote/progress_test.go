package remote_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/remote"
)

// newFloodPeer is a hostile A2A peer (JSON-RPC 1.0, streaming): its
// SendStreamingMessage streams n working updates as fast as it can write,
// each with a text of msgBytes and data of dataBytes, then the completed
// status; GetTask answers the completed task with the artifact {"ok":
// true}. It counts the streams it served.
func newFloodPeer(t *testing.T, n, msgBytes, dataBytes int) (url string, streams func() int) {
	t.Helper()
	var mu sync.Mutex
	served := 0
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"flood","description":"floods progress","version":"1.0.0",
		 "supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
		 "capabilities":{"streaming":true},"defaultInputModes":["application/json"],"defaultOutputModes":["application/json"],
		 "skills":[{"id":"work","name":"work","description":"work","tags":["t"]}]}`, srv.URL+"/a2a")
	})
	mux.HandleFunc("POST /a2a", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		task := `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_%s"}%s}`
		switch req.Method {
		case "SendStreamingMessage":
			mu.Lock()
			served++
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			event := func(result string) {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", req.ID, result)
			}
			event(`{"task":` + fmt.Sprintf(task, "SUBMITTED", "") + `}`)
			text, data := strings.Repeat("é", msgBytes/2), strings.Repeat("d", dataBytes)
			for i := range n {
				event(fmt.Sprintf(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING",`+
					`"message":{"messageId":"m%d","role":"ROLE_AGENT","parts":[{"text":%q},{"data":{"percent":250,"data":%q}}]}}}}`, i, text, data))
			}
			event(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`)
		case "GetTask":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID,
				fmt.Sprintf(task, "COMPLETED", `,"artifacts":[{"artifactId":"a1","parts":[{"data":{"ok":true}}]}]`))
		default:
			http.Error(w, "not this peer's method: "+req.Method, http.StatusBadRequest)
		}
	})
	return srv.URL, func() int {
		mu.Lock()
		defer mu.Unlock()
		return served
	}
}

// TestProgressFromAHostilePeer: a streaming peer that floods progress
// costs no more than a plugin may: reports past hostfn.ProgressRate a
// second (after a burst of hostfn.ProgressBurst) are dropped, messages are
// cut to hostfn.MaxProgressMessage bytes (whole runes), data over
// hostfn.MaxProgressData is dropped and percent clamped; the call still
// answers with the peer's result, read as stored (GetTask). Without a
// progress sink the peer is not streamed from at all.
func TestProgressFromAHostilePeer(t *testing.T) {
	t.Parallel()
	const n = 150
	url, streams := newFloodPeer(t, n, 4<<10, 20<<10)
	cfg := peerConfig("flood", url)
	cfg.MaxResponse = 64 << 20 // the whole stream counts against it
	// One attempt with room to read ~4 MB of events on a loaded machine
	// (under -race too): a retry would be a second stream.
	cfg.Timeout, cfg.AttemptTimeout, cfg.Retry.MaxAttempts = time.Minute, time.Minute, 1
	ps := mustPeers(t, nil, nil, cfg)

	var mu sync.Mutex
	var got []hostfn.Progress
	start := time.Now()
	res, err := ps.Call(callCtx(t), remote.Call{ID: "flood", Method: "work", Progress: progressFunc(func(p hostfn.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if string(res.Output) != `{"ok":true}` {
		t.Errorf("output %s, want the stored task's artifact", res.Output)
	}
	mu.Lock()
	defer mu.Unlock()
	if bound := hostfn.ProgressBurst + int(math.Ceil(hostfn.ProgressRate*elapsed.Seconds())); len(got) == 0 || len(got) > min(bound, n) {
		t.Errorf("%d of %d reports forwarded in %v; want 1..%d", len(got), n, elapsed, min(bound, n))
	}
	for _, p := range got {
		if len(p.Message) > hostfn.MaxProgressMessage || !strings.HasPrefix(p.Message, "é") || !strings.HasSuffix(p.Message, "é") ||
			p.Data != nil || p.Percent != 100 {
			t.Fatalf("forwarded report: %d-byte message, %d bytes of data, percent %v; want ≤ %d bytes of whole runes, no data, 100",
				len(p.Message), len(p.Data), p.Percent, hostfn.MaxProgressMessage)
		}
	}
	if streams() != 1 {
		t.Fatalf("%d streams served, want 1", streams())
	}
	// A stream over max_response is cut, and the result is read with
	// GetTask: the call still answers.
	small := peerConfig("flood-small", url)
	small.MaxResponse = 256 << 10
	res, err = mustPeers(t, nil, nil, small).Call(callCtx(t), remote.Call{ID: "flood-small", Method: "work", Progress: progressFunc(func(hostfn.Progress) {})})
	if err != nil || string(res.Output) != `{"ok":true}` {
		t.Errorf("a stream over max_response: %s, %v; want the result, polled", res.Output, err)
	}
	if streams() != 2 {
		t.Fatalf("%d streams served, want 2", streams())
	}
	// No sink: a blocking SendMessage, which this peer does not serve.
	if _, err := ps.Call(callCtx(t), remote.Call{ID: "flood", Method: "work"}); err == nil || streams() != 2 {
		t.Errorf("a call without progress sink streamed (%d streams, err %v)", streams(), err)
	}
}

// progressFunc is a test's progress sink.
type progressFunc func(hostfn.Progress)

func (f progressFunc) Progress(p hostfn.Progress) { f(p) }
