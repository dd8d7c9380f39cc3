package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rpc posts one JSON-RPC request and returns its result or error.
func rpc(t *testing.T, url, method, params string, header map[string]string) (json.RawMessage, *rpcError) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/rpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: bad response %q: %v", method, b, err)
	}
	return out.Result, out.Error
}

func sendParams(skill, data string) string {
	meta := ""
	if skill != "" {
		meta = fmt.Sprintf(`,"metadata":{"skillId":%q}`, skill)
	}
	return fmt.Sprintf(`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":%s}]%s}}`, data, meta)
}

func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	tests := []struct {
		name, method, params string
		header               map[string]string
		wantCode             int
		wantInData           string
	}{
		{"no skillId lists the skills", "SendMessage", sendParams("", `{}`), nil, -32602, "crash, echo, spin, strict"},
		{"unknown skill", "SendMessage", sendParams("nope", `{}`), nil, -32602, `"reason":"unknown_skill"`},
		{"unsupported version", "SendMessage", sendParams("echo", `{}`), map[string]string{"A2A-Version": "2.0"}, -32009, `"reason":"unsupported_version"`},
		{"version not matching method", "message/send", `{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}],"metadata":{"skillId":"echo"}}}`,
			map[string]string{"A2A-Version": "1.0"}, -32009, ""},
		{"push config", "CreateTaskPushNotificationConfig", `{}`, nil, -32003, ""},
		{"v0.3 push config", "tasks/pushNotificationConfig/set", `{}`, nil, -32003, ""},
		{"cancel unknown", "CancelTask", `{"id":"nope"}`, nil, -32001, ""},
		{"hostile task id", "GetTask", `{"id":"../../$JS.API"}`, nil, -32001, ""},
		{"file part refused", "SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"http://x/y"}],"metadata":{"skillId":"echo"}}}`, nil, -32005, ""},
		{"too many parts", "SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[` + strings.Repeat(`{"text":"a"},`, 100) + `{"text":"a"}],"metadata":{"skillId":"echo"}}}`, nil, -32602, ""},
		{"page size over cap", "ListTasks", `{"pageSize":101}`, nil, -32602, ""},
		{"bad page token", "ListTasks", `{"pageToken":"!!"}`, nil, -32602, ""},
		{"extended card off", "GetExtendedAgentCard", `{}`, nil, -32007, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, e := rpc(t, h.URL, tt.method, tt.params, tt.header)
			if e == nil || e.Code != tt.wantCode {
				t.Fatalf("error = %+v, want code %d", e, tt.wantCode)
			}
			if !strings.Contains(string(e.Data)+e.Message, tt.wantInData) {
				t.Errorf("error %s %s does not mention %q", e.Message, e.Data, tt.wantInData)
			}
		})
	}
	for _, v := range []string{"", "1.0", "1.0.0"} {
		if _, e := rpc(t, h.URL, "SendMessage", sendParams("echo", `{"a":1}`), map[string]string{"A2A-Version": v}); e != nil {
			t.Errorf("A2A-Version %q refused: %+v", v, e)
		}
	}
}

func TestSingleSkillRoutingAndTenant(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/single")
	res, e := rpc(t, h.URL, "SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hey"}]}}`, nil)
	if e != nil {
		t.Fatalf("the only skill was not chosen: %+v", e)
	}
	if !strings.Contains(string(res), `"TASK_STATE_COMPLETED"`) || !strings.Contains(string(res), `{"text":"hey"}`) {
		t.Errorf("result %s", res)
	}
	_, e = rpc(t, h.URL, "SendMessage", `{"tenant":"ghost","message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hey"}]}}`, nil)
	if e == nil || e.Code != -32602 {
		t.Errorf("unknown tenant: %+v", e)
	}
	resp, err := http.Get(h.URL + "/agents/echo-only/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&card)
	if card["name"] != "echo-only" || card["version"] != "2.0.0" || resp.Header.Get("ETag") == "" {
		t.Errorf("agent card %v etag %q", card["name"], resp.Header.Get("ETag"))
	}
}

func TestListTasksPaginates(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	var ids []string
	for i := range 5 {
		ctxID := "ctx-a"
		if i == 4 {
			ctxID = "ctx-b"
		}
		p := fmt.Sprintf(`{"message":{"messageId":"m%d","contextId":%q,"role":"ROLE_USER","parts":[{"data":{"i":%d}}],"metadata":{"skillId":"echo"}}}`, i, ctxID, i)
		res, e := rpc(t, h.URL, "SendMessage", p, nil)
		if e != nil {
			t.Fatal(e)
		}
		var r struct{ Task struct{ ID string } }
		_ = json.Unmarshal(res, &r)
		ids = append(ids, r.Task.ID)
	}
	type page struct {
		Tasks []struct {
			ID        string
			Artifacts []any
		}
		NextPageToken string
		TotalSize     int
		PageSize      int
	}
	var got []string
	token := ""
	for n := 0; ; n++ {
		res, e := rpc(t, h.URL, "ListTasks", fmt.Sprintf(`{"contextId":"ctx-a","pageSize":3,"pageToken":%q}`, token), nil)
		if e != nil {
			t.Fatal(e)
		}
		var p page
		_ = json.Unmarshal(res, &p)
		if p.TotalSize != 4 || p.PageSize != len(p.Tasks) || len(p.Tasks) != []int{3, 1}[min(n, 1)] {
			t.Errorf("page %d: totalSize %d pageSize %d", n, p.TotalSize, p.PageSize)
		}
		for _, tk := range p.Tasks {
			got = append(got, tk.ID)
			if tk.Artifacts != nil {
				t.Error("artifacts listed without includeArtifacts")
			}
		}
		if p.NextPageToken == "" {
			break
		}
		token = p.NextPageToken
	}
	want := []string{ids[3], ids[2], ids[1], ids[0]} // newest update first
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed ids (-want +got):\n%s", diff)
	}
}

// TestStreamsFanOut: several subscribers to one running task each get every
// event, and all of them see it end canceled.
func TestStreamsFanOut(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	res, e := rpc(t, h.URL, "SendMessage", `{"configuration":{"returnImmediately":true},"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{}}],"metadata":{"skillId":"spin"}}}`, nil)
	if e != nil {
		t.Fatal(e)
	}
	var r struct{ Task struct{ ID string } }
	_ = json.Unmarshal(res, &r)
	const n = 3
	var wg sync.WaitGroup
	streams := make([][]string, n)
	ready := make(chan struct{}, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streams[i] = readStream(t, h.URL, "SubscribeToTask", fmt.Sprintf(`{"id":%q}`, r.Task.ID), ready)
		}()
	}
	for range n {
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			t.Fatal("subscribers did not start")
		}
	}
	if _, e := rpc(t, h.URL, "CancelTask", fmt.Sprintf(`{"id":%q}`, r.Task.ID), nil); e != nil {
		t.Fatal(e)
	}
	wg.Wait()
	for i, s := range streams {
		if len(s) < 2 || s[0] != "task" || s[len(s)-1] != "statusUpdate:TASK_STATE_CANCELED" {
			t.Errorf("subscriber %d saw %v", i, s)
		}
	}
}

// readStream posts a streaming request and returns each event's kind; it
// signals ready once the first event (the Task) has arrived.
func readStream(t *testing.T, url, method, params string, ready chan<- struct{}) []string {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, params)
	resp, err := http.Post(url+"/rpc", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return nil
	}
	defer resp.Body.Close()
	var kinds []string
	b, _ := io.ReadAll(&notifyReader{r: resp.Body, first: ready})
	for _, line := range bytes.Split(b, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Result map[string]struct {
				Status struct{ State string }
			}
		}
		_ = json.Unmarshal(data, &ev)
		for k, v := range ev.Result {
			if k == "statusUpdate" {
				k += ":" + v.Status.State
			}
			kinds = append(kinds, k)
		}
	}
	return kinds
}

type notifyReader struct {
	r     io.Reader
	first chan<- struct{}
	done  bool
}

func (n *notifyReader) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if k > 0 && !n.done {
		n.done = true
		n.first <- struct{}{}
	}
	return k, err
}
