package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

const wait = 10 * time.Second // generous bound so a broken server fails instead of hanging

// harness runs Serve over two real pipes.
type harness struct {
	in     *os.File // the client's end of the server's input
	outR   *os.File
	out    *bufio.Reader
	errc   chan error
	cancel context.CancelFunc
}

// testLimits are the limits Serve runs with in these tests, unless a test
// adjusts them.
var testLimits = Limits{MaxFrameBytes: 1 << 20, Concurrency: 4, DrainTimeout: 10 * time.Second}

func mustServe(t *testing.T, eng *jsonrpc.Engine, adjust ...func(*Limits)) *harness {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	h := &harness{in: inW, outR: outR, out: bufio.NewReader(outR), errc: make(chan error, 1), cancel: cancel}
	go func() {
		lim := testLimits
		for _, f := range adjust {
			f(&lim)
		}
		err := Serve(ctx, inR, outW, eng, lim)
		outW.Close()
		h.errc <- err
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		select {
		case <-h.errc:
		case <-time.After(wait):
			t.Error("Serve did not return")
		}
		inR.Close()
		outR.Close()
	})
	return h
}

func (h *harness) write(t *testing.T, raw string) {
	t.Helper()
	if _, err := h.in.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) send(t *testing.T, body string) {
	t.Helper()
	if err := WriteFrame(h.in, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

type resp struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int            `json:"code"`
		Data map[string]any `json:"data"`
	} `json:"error"`
	ID json.RawMessage `json:"id"`
}

func (h *harness) recv(t *testing.T) resp {
	t.Helper()
	if err := h.outR.SetReadDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	body, err := ReadFrame(h.out, 1<<20)
	if err != nil {
		t.Fatalf("reading response frame: %v", err)
	}
	var r resp
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response frame is not JSON: %v: %q", err, body)
	}
	return r
}

// closeAndWait ends the input and returns Serve's result.
func (h *harness) closeAndWait(t *testing.T) error {
	t.Helper()
	h.in.Close()
	select {
	case err := <-h.errc:
		h.errc <- err // for Cleanup
		return err
	case <-time.After(wait):
		t.Fatal("Serve did not return after EOF")
		return nil
	}
}

func (r resp) String() string {
	if r.Error != nil {
		return fmt.Sprintf("id=%s error=%d/%v", r.ID, r.Error.Code, r.Error.Data["reason"])
	}
	return fmt.Sprintf("id=%s result=%s", r.ID, r.Result)
}

func testEngine(t *testing.T, release <-chan struct{}, started chan<- string) *jsonrpc.Engine {
	t.Helper()
	e := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20})
	e.Register("echo", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if jsonrpc.TransportFrom(ctx).Name != "stdio" {
			return nil, fmt.Errorf("transport info missing")
		}
		return req.Params, nil
	})
	e.Register("block", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if started != nil {
			started <- string(req.ID)
		}
		select {
		case <-release:
			return "released", nil
		case <-time.After(wait):
			return nil, fmt.Errorf("never released")
		}
	})
	return e
}

type countStream struct {
	n, i   int
	fail   bool
	closed *atomic.Int64
}

func (s *countStream) Next(ctx context.Context) (any, error) {
	if s.i == s.n {
		if s.fail {
			return nil, fault.New(fault.SkillFailed, fault.ReasonTrap, "guest trapped")
		}
		return nil, io.EOF
	}
	s.i++
	return map[string]int{"event": s.i}, nil
}

func (s *countStream) Close() error { s.closed.Add(1); return nil }
