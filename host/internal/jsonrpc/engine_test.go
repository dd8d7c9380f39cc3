package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

// mustHandle runs body through e and returns the raw response (fails if none).
func mustHandle(t *testing.T, e *Engine, body string) []byte {
	t.Helper()
	reply := e.Handle(t.Context(), []byte(body))
	if reply.Body == nil {
		t.Fatalf("no response for %s", body)
	}
	return reply.Body
}

// wireErr is the decoded error member of a response.
type wireErr struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

type wireResp struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  json.RawMessage `json:"result"`
	Error   *wireErr        `json:"error"`
	ID      json.RawMessage `json:"id"`
}

func mustResp(t *testing.T, body []byte) wireResp {
	t.Helper()
	var r wireResp
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response is not a JSON-RPC response object: %v\n%s", err, body)
	}
	if r.JSONRPC != "2.0" {
		t.Fatalf(`response lacks "jsonrpc":"2.0": %s`, body)
	}
	return r
}

func echoEngine(t *testing.T, opts ...Option) *Engine {
	t.Helper()
	e := NewEngine(testLimits, opts...)
	e.Register("echo", func(ctx context.Context, req *Request) (any, error) {
		if req.Params == nil {
			return nil, nil
		}
		return req.Params, nil
	})
	return e
}

func TestIDEchoedByteExact(t *testing.T) {
	t.Parallel()
	e := echoEngine(t)
	for _, id := range []string{`1`, `1.0`, `-0`, `1e400`, `12345678901234567890`, `"x"`, `""`, `"\u00e9\n"`, `null`} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			body := mustHandle(t, e, `{"jsonrpc":"2.0","method":"echo","id" :  `+id+` }`)
			if want := `,"id":` + id + `}`; !strings.HasSuffix(string(body), want) {
				t.Errorf("response %s does not end with %s", body, want)
			}
			// Errors echo the id byte-exactly too.
			body = mustHandle(t, e, `{"jsonrpc":"2.0","method":"nope","id":`+id+`}`)
			if r := mustResp(t, body); string(r.ID) != id || r.Error == nil {
				t.Errorf("error response id = %s, want %s: %s", r.ID, id, body)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		wantCode   int
		wantID     string
		wantMsg    string
	}{
		{"id object", `{"jsonrpc":"2.0","method":"echo","id":{"a":1}}`, -32600, "null", "id must be"},
		{"id array", `{"jsonrpc":"2.0","method":"echo","id":[1]}`, -32600, "null", "id must be"},
		{"id bool", `{"jsonrpc":"2.0","method":"echo","id":true}`, -32600, "null", "id must be"},
		{"jsonrpc missing", `{"method":"echo","id":1}`, -32600, "1", `"jsonrpc"`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","method":"echo","id":1}`, -32600, "1", `"jsonrpc"`},
		{"jsonrpc number", `{"jsonrpc":2.0,"method":"echo","id":1}`, -32600, "1", `"jsonrpc"`},
		{"method missing", `{"jsonrpc":"2.0","id":1}`, -32600, "1", `"method"`},
		{"method empty", `{"jsonrpc":"2.0","method":"","id":1}`, -32600, "1", `"method"`},
		{"method number", `{"jsonrpc":"2.0","method":7,"id":"a"}`, -32600, `"a"`, `"method"`},
		{"params string", `{"jsonrpc":"2.0","method":"echo","params":"bar","id":1}`, -32600, "1", `"params"`},
		{"params null", `{"jsonrpc":"2.0","method":"echo","params":null,"id":1}`, -32600, "1", `"params"`},
		{"params number", `{"jsonrpc":"2.0","method":"echo","params":3}`, -32600, "null", `"params"`},
		{"scalar body", `42`, -32600, "null", "must be a JSON object"},
		{"string body", `"call"`, -32600, "null", "must be a JSON object"},
		{"null body", `null`, -32600, "null", "must be a JSON object"},
		{"empty body", ``, -32700, "null", "not valid JSON"},
		{"trailing garbage", `{"jsonrpc":"2.0","method":"echo","id":1} x`, -32700, "null", "not valid JSON"},
		{"two values", `{"jsonrpc":"2.0","method":"echo","id":1}{"jsonrpc":"2.0","method":"echo","id":2}`, -32700, "null", "not valid JSON"},
		{"duplicate method", `{"jsonrpc":"2.0","method":"echo","method":"admin","id":1}`, -32600, "null", `duplicate member "method"`},
		{"duplicate escaped", `{"jsonrpc":"2.0","method":"echo","params":{"a":1,"\u0061":2},"id":1}`, -32600, "null", `duplicate member "a"`},
		{"duplicate in array element", `{"jsonrpc":"2.0","method":"echo","params":[{"x":[1,{"y":1,"y":2}]}],"id":1}`, -32600, "null", `duplicate member "y"`},
		{"duplicate in params", `{"jsonrpc":"2.0","method":"echo","params":{"a":{"b":1,"b":2}},"id":1}`, -32600, "null", `duplicate member "b"`},
		{"unknown method", `{"jsonrpc":"2.0","method":"rm -rf","id":1}`, -32601, "1", `method "rm -rf" not found`},
	}
	e := echoEngine(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustResp(t, mustHandle(t, e, tt.body))
			if r.Error == nil {
				t.Fatalf("want error %d, got result %s", tt.wantCode, r.Result)
			}
			if r.Error.Code != tt.wantCode || string(r.ID) != tt.wantID || !strings.Contains(r.Error.Message, tt.wantMsg) {
				t.Errorf("got code %d id %s message %q; want %d, %s, containing %q",
					r.Error.Code, r.ID, r.Error.Message, tt.wantCode, tt.wantID, tt.wantMsg)
			}
		})
	}
}

func TestValidParamsShapes(t *testing.T) {
	t.Parallel()
	e := echoEngine(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"echo","id":1}`,
		`{"jsonrpc":"2.0","method":"echo","params":[],"id":1}`,
		`{"jsonrpc":"2.0","method":"echo","params":{},"id":1}`,
		`{"jsonrpc":"2.0","method":"echo","params":[{"a":1},{"a":1}],"id":1,"extra":true}`,
	} {
		if r := mustResp(t, mustHandle(t, e, body)); r.Error != nil {
			t.Errorf("%s: unexpected error %+v", body, r.Error)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	batch := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","id":%d}`, i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	tests := []struct {
		name       string
		opts       []Option
		body       string
		wantReason string // "" = success expected
	}{
		{"body at default limit", nil, `{"jsonrpc":"2.0","method":"echo","params":["` + strings.Repeat("a", testLimits.MaxBodyBytes-60) + `"],"id":1}`, ""},
		{"body over default limit", nil, `{"jsonrpc":"2.0","method":"echo","params":["` + strings.Repeat("a", testLimits.MaxBodyBytes) + `"],"id":1}`, fault.ReasonBodyTooLarge},
		{"body over custom limit", []Option{withMaxBody(64)}, `{"jsonrpc":"2.0","method":"echo","params":["` + strings.Repeat("a", 64) + `"],"id":1}`, fault.ReasonBodyTooLarge},
		{"batch at default limit", nil, batch(testLimits.MaxBatch), ""},
		{"batch over default limit", nil, batch(testLimits.MaxBatch + 1), fault.ReasonBatchTooLarge},
		{"batch over custom limit", []Option{withMaxBatch(2)}, batch(3), fault.ReasonBatchTooLarge},
		{"hostile batch of scalars", nil, "[" + strings.Repeat("1,", 200000) + "1]", fault.ReasonBatchTooLarge},
		{"hostile nesting", nil, strings.Repeat("[", 20000) + strings.Repeat("]", 20000), fault.ReasonParse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := mustHandle(t, echoEngine(t, tt.opts...), tt.body)
			if tt.wantReason == "" {
				if strings.Contains(string(body), `"error"`) {
					t.Fatalf("unexpected error: %.300s", body)
				}
				return
			}
			r := mustResp(t, body) // an object, never an array
			if r.Error == nil || r.Error.Data["reason"] != tt.wantReason || string(r.ID) != "null" {
				t.Fatalf("want one error with reason %s and id null, got %.300s", tt.wantReason, body)
			}
			if tt.wantReason != fault.ReasonParse && r.Error.Code != -32600 {
				t.Errorf("code = %d, want -32600", r.Error.Code)
			}
		})
	}
}

func TestBatchConcurrentAndOrdered(t *testing.T) {
	t.Parallel()
	const bound, n = 3, 20
	var inflight, peak atomic.Int64
	ready := make(chan struct{})
	var once atomic.Bool
	e := NewEngine(testLimits, withBatchConcurrency(bound))
	e.Register("slow", func(ctx context.Context, req *Request) (any, error) {
		cur := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		if cur == bound && once.CompareAndSwap(false, true) {
			close(ready)
		}
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("batch never reached %d concurrent calls", bound)
		}
		return string(req.ID), nil
	})
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"slow","id":%d}`, i)
	}
	body := mustHandle(t, e, "["+strings.Join(parts, ",")+"]")
	var got []wireResp
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("got %d responses, want %d", len(got), n)
	}
	for i, r := range got {
		if string(r.ID) != fmt.Sprint(i) || string(r.Result) != fmt.Sprintf(`"%d"`, i) {
			t.Errorf("response %d = id %s result %s", i, r.ID, r.Result)
		}
	}
	if p := peak.Load(); p > bound {
		t.Errorf("peak concurrency %d exceeds bound %d", p, bound)
	}
}

func TestNotifications(t *testing.T) {
	t.Parallel()
	var notified atomic.Int64
	e := specEngine(t, &notified)
	e.Register("boom", func(ctx context.Context, req *Request) (any, error) { panic("notified panic") })
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"update","params":[1]}`,
		`{"jsonrpc":"2.0","method":"unknown"}`,
		`{"jsonrpc":"2.0","method":"boom"}`,
		`{"jsonrpc":"2.0","method":"subtract","params":{"version":"9"}}`,
		`[{"jsonrpc":"2.0","method":"update"},{"jsonrpc":"2.0","method":"notify_hello"}]`,
	} {
		if reply := e.Handle(t.Context(), []byte(body)); reply.Body != nil || reply.Streaming() {
			t.Errorf("%s: want no response, got %s", body, reply.Body)
		}
	}
	if got := notified.Load(); got != 3 {
		t.Errorf("notification handlers ran %d times, want 3", got)
	}
}

func TestBatchDuplicateKeyIsPerElement(t *testing.T) {
	t.Parallel()
	e := echoEngine(t)
	body := mustHandle(t, e, `[{"jsonrpc":"2.0","method":"echo","id":1,"id":2},{"jsonrpc":"2.0","method":"echo","params":[1],"id":3}]`)
	var got []wireResp
	if err := json.Unmarshal(body, &got); err != nil || len(got) != 2 {
		t.Fatalf("want 2 responses: %v %s", err, body)
	}
	if got[0].Error == nil || got[0].Error.Code != -32600 || string(got[0].ID) != "null" {
		t.Errorf("duplicate id element: %s", body)
	}
	if diff := cmp.Diff(`[1]`, string(got[1].Result)); diff != "" {
		t.Errorf("valid element result (-want +got):\n%s", diff)
	}
}

func TestRegisterRefusesDuplicates(t *testing.T) {
	t.Parallel()
	e := echoEngine(t)
	defer func() {
		if recover() == nil {
			t.Error("duplicate Register did not panic")
		}
	}()
	e.Register("echo", func(context.Context, *Request) (any, error) { return nil, nil })
}

func TestMethods(t *testing.T) {
	t.Parallel()
	want := []string{"get_data", "notify_hello", "notify_sum", "subtract", "sum", "update"}
	if diff := cmp.Diff(want, specEngine(t, nil).Methods()); diff != "" {
		t.Errorf("Methods (-want +got):\n%s", diff)
	}
}

// TestStreamingMethodRefusedBeforeItRuns: a method marked Streaming never
// runs inside a batch or as a notification.
func TestStreamingMethodRefusedBeforeItRuns(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	eng := NewEngine(testLimits)
	eng.Register("watch", func(context.Context, *Request) (any, error) {
		ran.Add(1)
		return nil, nil
	}, Streaming())
	ctx := context.Background()
	if r := eng.Handle(ctx, []byte(`{"jsonrpc":"2.0","method":"watch"}`)); r.Body != nil || r.Streaming() {
		t.Errorf("notification got a reply: %s", r.Body)
	}
	r := eng.Handle(ctx, []byte(`[{"jsonrpc":"2.0","id":1,"method":"watch"}]`))
	if !strings.Contains(string(r.Body), `"reason":"stream_not_batchable"`) {
		t.Errorf("batch reply %s lacks stream_not_batchable", r.Body)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("handler ran %d times; want 0", n)
	}
}

// TestMiddlewareWrapsEveryMethod: WithMiddleware sees each registered method.
func TestMiddlewareWrapsEveryMethod(t *testing.T) {
	t.Parallel()
	var seen []string
	eng := NewEngine(testLimits, WithMiddleware(func(method string, h Handler) Handler {
		return func(ctx context.Context, req *Request) (any, error) {
			seen = append(seen, method)
			return h(ctx, req)
		}
	}))
	eng.Register("a", func(context.Context, *Request) (any, error) { return 1, nil })
	eng.RegisterA2A("B", func(context.Context, *Request) (any, error) { return 2, nil })
	eng.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"a"}`))
	eng.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"B"}`))
	if diff := cmp.Diff([]string{"a", "B"}, seen); diff != "" {
		t.Errorf("middleware calls (-want +got):\n%s", diff)
	}
}
