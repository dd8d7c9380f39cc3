package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

// bigEngine serves "big": a 1 MiB string, counting its calls.
func bigEngine(calls *atomic.Int64, opts ...Option) *Engine {
	e := NewEngine(testLimits, opts...)
	big := strings.Repeat("x", 1<<20)
	e.Register("big", func(context.Context, *Request) (any, error) {
		calls.Add(1)
		return big, nil
	})
	e.Register("small", func(context.Context, *Request) (any, error) { return 1, nil })
	return e
}

func batchOf(n int, method string) string {
	elems := make([]string, n)
	for i := range elems {
		elems[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, i, method)
	}
	return "[" + strings.Join(elems, ",") + "]"
}

// TestBatchResponseCap is the amplification attack: 64 requests for a 1 MiB
// result in one small batch. The response stays under the cap; elements
// past it get -32106 output_limit and most are never run.
func TestBatchResponseCap(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	const limit = 4 << 20
	e := bigEngine(&calls, withMaxBatchResponse(limit), withBatchConcurrency(2))
	body := batchOf(64, "big")
	reply := e.Handle(t.Context(), []byte(body))
	defer reply.Done()
	if len(body) > 8<<10 || len(reply.Body) > limit+64*1024 {
		t.Fatalf("a %d-byte batch made a %d-byte response (cap %d)", len(body), len(reply.Body), limit)
	}
	var got []wireResp
	if err := json.Unmarshal(reply.Body, &got); err != nil || len(got) != 64 {
		t.Fatalf("decode %d-byte batch response: %v (%d elements)", len(reply.Body), err, len(got))
	}
	ok, capped := 0, 0
	for i, r := range got {
		switch {
		case r.Error == nil:
			ok++
		case r.Error.Code == -32106 && r.Error.Data["reason"] == fault.ReasonOutputLimit:
			capped++
		default:
			t.Errorf("element %d: %+v", i, r.Error)
		}
		if string(r.ID) != fmt.Sprint(i) {
			t.Errorf("element %d has id %s: order lost", i, r.ID)
		}
	}
	if ok != 3 || capped != 61 {
		t.Errorf("%d results and %d output_limit errors, want 3 and 61", ok, capped)
	}
	if n := calls.Load(); n > 3+2+2 {
		t.Errorf("the handler ran %d times; elements after the cap should mostly not run", n)
	}
}

// TestBatchUnderTheCapIsWhole: a batch whose responses fit is answered in
// full.
func TestBatchUnderTheCapIsWhole(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	e := bigEngine(&calls)
	var got []wireResp
	if err := json.Unmarshal(mustHandle(t, e, batchOf(64, "small")), &got); err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r.Error != nil || string(r.Result) != "1" {
			t.Errorf("element %d: %+v", i, r)
		}
	}
}

// TestResponseBudget: responses held for clients count against the
// host-wide budget until the transport is done with them; one that does not
// fit is refused with -32106 response_budget, and fits again once bytes are
// given back.
func TestResponseBudget(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	e := bigEngine(&calls, withResponseBudget(3<<20))
	one := `{"jsonrpc":"2.0","id":"a","method":"big"}`
	var held []Reply
	for i := range 3 {
		r := e.Handle(t.Context(), []byte(one))
		resp := mustResp(t, r.Body)
		if i < 2 && resp.Error != nil {
			t.Fatalf("response %d: %+v", i, resp.Error)
		}
		if i == 2 {
			if resp.Error == nil || resp.Error.Code != -32106 || resp.Error.Data["reason"] != fault.ReasonResponseBudget || string(resp.ID) != `"a"` {
				t.Fatalf("third response while two are held: %s", r.Body[:min(len(r.Body), 300)])
			}
		}
		held = append(held, r)
	}
	held[0].Done()
	held[0].Done() // twice is harmless
	r := e.Handle(t.Context(), []byte(one))
	if resp := mustResp(t, r.Body); resp.Error != nil {
		t.Errorf("after one was released: %+v", resp.Error)
	}
	r.Done()
	// A batch holds its elements' bytes until its reply is done too.
	b := e.Handle(t.Context(), []byte(batchOf(3, "big")))
	var got []wireResp
	if err := json.Unmarshal(b.Body, &got); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, g := range got {
		if g.Error != nil {
			reasons = append(reasons, fmt.Sprint(g.Error.Data["reason"]))
		}
	}
	if diff := cmp.Diff([]string{fault.ReasonResponseBudget, fault.ReasonResponseBudget}, reasons); diff != "" {
		t.Errorf("batch with room for one more response (-want +got):\n%s", diff)
	}
	b.Done()
	held[1].Done()
	if used := e.budget.used.Load(); used != 0 {
		t.Errorf("%d bytes still held after every reply was done", used)
	}
}
