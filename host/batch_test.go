package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// TestBatchAmplificationIsCapped is the attack of issue 8 finding 5: one
// 1 MiB context value read 64 times in a batch of a few KB. The response
// stays within rpc.max_batch_response; the elements past it get -32106
// output_limit.
func TestBatchAmplificationIsCapped(t *testing.T) {
	t.Parallel()
	th := mustHost(t, t.TempDir())
	sid := "a" // short ids keep the batch small
	th.mustResult(t, "_cleveragents/session/create", map[string]any{"session_id": sid})
	value := strings.Repeat("v", 1<<20-1024) // fits http.body_limit in a context/set
	th.mustResult(t, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "big", "value": value})
	elems := make([]string, 64)
	for i := range elems {
		elems[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"_cleveragents/context/get","params":{"session_id":%q,"context_key":"big"}}`, i, sid)
	}
	body := "[" + strings.Join(elems, ",") + "]"
	if len(body) > 8<<10 {
		t.Fatalf("the batch is %d bytes; the attack needs under 8 KB", len(body))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	status, resp, err := th.post(ctx, "/rpc", []byte(body))
	if err != nil || status != 200 {
		t.Fatalf("POST: %d %v", status, err)
	}
	limit := int(config.Defaults().RPC.MaxBatchResponse)
	if len(resp) > limit+64<<10 {
		t.Fatalf("a %d-byte batch got a %d-byte response; the cap is %d", len(body), len(resp), limit)
	}
	var got []rpcResponse
	if err := json.Unmarshal(resp, &got); err != nil || len(got) != 64 {
		t.Fatalf("decode: %v (%d elements)", err, len(got))
	}
	values, capped := 0, 0
	for i, r := range got {
		switch {
		case r.Error == nil:
			values++
		case r.Error.Code == -32106 && r.Error.reason() == "output_limit":
			capped++
		default:
			t.Errorf("element %d: %d %s", i, r.Error.Code, r.Error.reason())
		}
	}
	if values == 0 || values > limit>>20 || values+capped != 64 {
		t.Errorf("%d values and %d output_limit errors; want at most %d values, the rest capped", values, capped, limit>>20)
	}
}

// TestResponseBudgetIsHostWide: clients that together ask for more
// response bytes than rpc.response_budget get -32106 response_budget for
// the excess, never an unbounded host; the host answers normally after.
func TestResponseBudgetIsHostWide(t *testing.T) {
	t.Parallel()
	th, _ := mustHostWith(t, t.TempDir(), func(c *config.Config) { c.RPC.ResponseBudget = 384 << 10 })
	sid := th.mustSession(t)
	// 128 KiB values keep 24 concurrent reads light for NATS under -race on
	// a loaded machine (1 MiB ones ran into the store's 5 s API timeout, and
	// 256 KiB ones sometimes did too).
	value := strings.Repeat("v", 128<<10-1024)
	th.mustResult(t, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "big", "value": value})
	// Batches of three values each: one batch fills the budget, so
	// concurrent ones must be refused in part.
	elems := make([]string, 3)
	for i := range elems {
		elems[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"_cleveragents/context/get","params":{"session_id":%q,"context_key":"big"}}`, i, sid)
	}
	batch := []byte("[" + strings.Join(elems, ",") + "]")
	var mu sync.Mutex
	reasons := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, resp, err := th.post(ctx, "/rpc", batch)
			if err != nil {
				t.Errorf("POST: %v", err)
				return
			}
			var got []rpcResponse
			if err := json.Unmarshal(resp, &got); err != nil {
				t.Errorf("decode: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range got {
				if r.Error == nil {
					reasons["ok"]++
				} else {
					reasons[r.Error.reason()]++
				}
			}
		})
	}
	wg.Wait()
	// A read the store could not answer in time on an overloaded machine
	// (store_unavailable, retryable) is no budget outcome; anything else is.
	if n := reasons["store_unavailable"]; n > 0 {
		t.Logf("%d reads got store_unavailable (the machine is loaded)", n)
	}
	if reasons["ok"] == 0 || reasons["response_budget"] == 0 || reasons["ok"]+reasons["response_budget"]+reasons["store_unavailable"] != 24 {
		t.Errorf("outcomes %v: want values and response_budget errors only, both present", reasons)
	}
	r := th.mustResult(t, "_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "big"})
	if r["value"] != value {
		t.Error("the value could not be read once the burst was over")
	}
}
