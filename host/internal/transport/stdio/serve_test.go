package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/client"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	h := mustServe(t, testEngine(t, nil, nil))
	h.send(t, `{"jsonrpc":"2.0","method":"echo","params":{"text":"héllo"},"id":"req_1"}`)
	if got := h.recv(t); string(got.ID) != `"req_1"` || string(got.Result) != `{"text":"héllo"}` {
		t.Errorf("got %v", got)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"echo","params":[1]}`) // notification: no frame back
	h.send(t, `[{"jsonrpc":"2.0","method":"echo","params":[2],"id":2},{"jsonrpc":"2.0","method":"nope","id":3}]`)
	if err := h.outR.SetReadDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	body, err := ReadFrame(h.out, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var batch []resp
	if err := json.Unmarshal(body, &batch); err != nil || len(batch) != 2 || batch[1].Error.Code != -32601 {
		t.Fatalf("batch frame %q: %v", body, err)
	}
	if err := h.closeAndWait(t); err != nil {
		t.Errorf("Serve after EOF = %v, want nil", err)
	}
}

func TestMultipleFramesInOneWrite(t *testing.T) {
	t.Parallel()
	h := mustServe(t, testEngine(t, nil, nil))
	var raw strings.Builder
	for i := range 10 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","params":[%d],"id":%d}`, i, i)
		sep := []string{"\n", "\r\n", ""}[i%3] // every tolerated terminator
		fmt.Fprintf(&raw, "%d\r\n%s%s", len(body), body, sep)
	}
	h.write(t, raw.String())
	var got []string
	for range 10 {
		got = append(got, h.recv(t).String())
	}
	sort.Strings(got)
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("id=%d result=[%d]", i, i))
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
}

func TestMalformedFramesResync(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw  string
		wantCode   int
		wantReason string
	}{
		{"non numeric", "hello\n", -32700, "parse_error"},
		{"raw json without length", `{"jsonrpc":"2.0","method":"echo","id":9}` + "\n" + "more junk\n", -32700, "parse_error"},
		{"negative", "-12\n", -32700, "parse_error"},
		{"huge header", strings.Repeat("9", 10000) + "\n", -32700, "parse_error"},
		{"over max frame", "64\n" + strings.Repeat(" ", 64) + "\n", -32600, "body_too_large"},
		{"not json body", "5\nhello\n", -32700, "parse_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := mustServe(t, testEngine(t, nil, nil), func(l *Limits) { l.MaxFrameBytes = 63 })
			h.write(t, tt.raw)
			h.send(t, `{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}`)
			bad, good := h.recv(t), h.recv(t)
			if string(bad.ID) == "1" { // a well-framed bad body is handled concurrently with the good one
				bad, good = good, bad
			}
			if bad.Error == nil || bad.Error.Code != tt.wantCode || bad.Error.Data["reason"] != tt.wantReason || string(bad.ID) != "null" {
				t.Fatalf("first frame = %v, want error %d %s", bad, tt.wantCode, tt.wantReason)
			}
			if good.String() != "id=1 result=[1]" {
				t.Fatalf("after the bad frame got %v", good)
			}
			if err := h.closeAndWait(t); err != nil {
				t.Errorf("Serve = %v", err)
			}
		})
	}
}

func TestTruncatedAndEOF(t *testing.T) {
	t.Parallel()
	t.Run("empty input", func(t *testing.T) {
		t.Parallel()
		h := mustServe(t, testEngine(t, nil, nil))
		if err := h.closeAndWait(t); err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	})
	t.Run("truncated body", func(t *testing.T) {
		t.Parallel()
		h := mustServe(t, testEngine(t, nil, nil))
		h.write(t, `50`+"\n"+`{"jsonrpc":"2.0"`)
		h.in.Close()
		if r := h.recv(t); r.Error == nil || r.Error.Code != -32700 {
			t.Errorf("got %v, want -32700", r)
		}
		if err := h.closeAndWait(t); err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	})
}

func TestSlowCallDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	h := mustServe(t, testEngine(t, release, nil))
	h.send(t, `{"jsonrpc":"2.0","method":"block","id":"slow"}`)
	for i := range 3 {
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","params":[%d],"id":"fast%d"}`, i, i))
	}
	got := map[string]bool{}
	for range 3 {
		got[h.recv(t).String()] = true
	}
	close(release)
	if r := h.recv(t); r.String() != `id="slow" result="released"` {
		t.Errorf("slow call answered %v", r)
	}
	want := map[string]bool{`id="fast0" result=[0]`: true, `id="fast1" result=[1]`: true, `id="fast2" result=[2]`: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fast responses (-want +got):\n%s", diff)
	}
}

func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan string, 10)
	h := mustServe(t, testEngine(t, release, started), func(l *Limits) { l.Concurrency = 2 })
	for i := range 3 {
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"block","id":%d}`, i))
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(wait):
			t.Fatal("two calls did not start")
		}
	}
	select {
	case id := <-started:
		t.Fatalf("call %s started beyond the bound of 2", id)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	for range 3 {
		if r := h.recv(t); string(r.Result) != `"released"` {
			t.Errorf("got %v", r)
		}
	}
}

func TestStreamFrames(t *testing.T) {
	t.Parallel()
	var closed atomic.Int64
	e := testEngine(t, nil, nil)
	e.Register("count", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		var p struct {
			N    int  `json:"n"`
			Fail bool `json:"fail"`
		}
		if err := req.Bind(&p); err != nil {
			return nil, err
		}
		return &countStream{n: p.N, fail: p.Fail, closed: &closed}, nil
	})
	e.Register("nilstream", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		var s *countStream // Next panics on the nil receiver
		return s, nil
	})
	h := mustServe(t, e)
	h.send(t, `{"jsonrpc":"2.0","method":"count","params":{"n":3},"id":"s1"}`)
	for i := 1; i <= 3; i++ {
		if r := h.recv(t); r.String() != fmt.Sprintf(`id="s1" result={"event":%d}`, i) {
			t.Fatalf("event %d: %v", i, r)
		}
	}
	h.send(t, `{"jsonrpc":"2.0","method":"count","params":{"n":1,"fail":true},"id":"s2"}`)
	if r := h.recv(t); r.String() != `id="s2" result={"event":1}` {
		t.Fatalf("failing stream event: %v", r)
	}
	if r := h.recv(t); r.String() != `id="s2" error=-32103/trap` {
		t.Fatalf("failing stream end: %v", r)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"nilstream","id":"s3"}`)
	if r := h.recv(t); r.String() != `id="s3" error=-32603/internal` {
		t.Fatalf("panicking stream: %v", r)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"echo","params":["after"],"id":2}`)
	if r := h.recv(t); r.String() != `id=2 result=["after"]` {
		t.Errorf("after the streams: %v", r)
	}
	if err := h.closeAndWait(t); err != nil {
		t.Fatal(err)
	}
	if got := closed.Load(); got != 2 {
		t.Errorf("%d streams closed, want 2", got)
	}
}

func TestWriteFailureEndsServe(t *testing.T) {
	t.Parallel()
	h := mustServe(t, testEngine(t, nil, nil))
	h.outR.Close() // the client went away
	for i := range 3 {
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","id":%d}`, i))
	}
	select {
	case err := <-h.errc:
		h.errc <- err
		if err == nil {
			t.Error("Serve = nil after a write failure, want the error")
		}
	case <-time.After(wait):
		t.Fatal("Serve did not return after its output broke")
	}
}

func TestCancelFinishesInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan string, 1)
	h := mustServe(t, testEngine(t, release, started))
	h.send(t, `{"jsonrpc":"2.0","method":"block","id":1}`)
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("call did not start")
	}
	h.cancel()
	close(release)
	if r := h.recv(t); string(r.Result) != `"released"` {
		t.Errorf("in-flight call after cancel: %v", r)
	}
	select {
	case err := <-h.errc:
		h.errc <- err
		if err != nil {
			t.Errorf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(wait):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestCallHelperOverStdio(t *testing.T) {
	t.Parallel()
	h := mustServe(t, testEngine(t, nil, nil))
	doer := func(ctx context.Context, body []byte) ([]byte, error) {
		if err := WriteFrame(h.in, body); err != nil {
			return nil, err
		}
		return ReadFrame(h.out, 1<<20)
	}
	var out []string
	if err := client.Call(t.Context(), doer, "echo", []string{"a", "b"}, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, out); diff != "" {
		t.Errorf("Call result (-want +got):\n%s", diff)
	}
}

// TestServeGivesUpOnAStalledPeer: a peer that stops reading the host's
// output cannot hold Serve after ctx ends; it returns ErrOutputStalled once
// the drain timeout has passed.
func TestServeGivesUpOnAStalledPeer(t *testing.T) {
	t.Parallel()
	eng := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20})
	handled := make(chan struct{}, 3)
	eng.Register("big", func(context.Context, *jsonrpc.Request) (any, error) {
		handled <- struct{}{}
		return strings.Repeat("x", 64<<10), nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // nobody reads outR
	t.Cleanup(func() { outR.Close(); inW.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, inR, outW, eng, Limits{MaxFrameBytes: 1 << 20, Concurrency: 4, DrainTimeout: 200 * time.Millisecond})
	}()
	body := `{"jsonrpc":"2.0","id":1,"method":"big"}`
	for range 3 {
		if _, err := fmt.Fprintf(inW, "%d\n%s\n", len(body), body); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 { // every call ran; their responses wait for a reader that never comes
		<-handled
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrOutputStalled) {
			t.Fatalf("Serve = %v, want ErrOutputStalled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5s of ctx cancel while the peer was not reading")
	}
}
