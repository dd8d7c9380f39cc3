package jsonrpc

import (
	"context"
	"sync/atomic"

	"github.com/skillhost/skillhost/host/fault"
)

// responseBudget is the host-wide budget of response bytes the engine has
// produced and the transports have not yet handed over (Reply.Done). Many
// clients each asking for a large response at once cannot make the host
// hold more than this in memory.
type responseBudget struct {
	max  int64
	used atomic.Int64
}

// take holds n bytes, or reports that they do not fit.
func (b *responseBudget) take(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (b *responseBudget) give(n int64) { b.used.Add(-n) }

// held is a response's bytes in the budget, given back once.
type held struct {
	budget *responseBudget
	n      int64
	given  atomic.Bool
}

func (h *held) give() {
	if h.given.CompareAndSwap(false, true) {
		h.budget.give(h.n)
	}
}

// hold takes body's bytes from the host-wide response budget. It returns
// what to send — body, or, when the budget cannot hold it, a -32106
// response_budget error for req — and what gives the bytes back (nil when
// nothing is held).
func (e *Engine) hold(ctx context.Context, req *Request, body []byte) ([]byte, *held) {
	if e.budget == nil {
		return body, nil
	}
	n := int64(len(body))
	if !e.budget.take(n) {
		err := fault.Newf(fault.ResourceExhausted, fault.ReasonResponseBudget,
			"the host is holding its limit of %d bytes of responses for clients; try again shortly", e.budget.max).
			With("response_budget_bytes", e.budget.max)
		return e.requestError(ctx, req, err).Body, nil
	}
	return body, &held{budget: e.budget, n: n}
}

// Done tells the engine the transport has handed the reply's Body over: the
// bytes it held in the host-wide response budget (WithResponseBudget) are
// free again. Transports call it once the body is written or copied out; it
// is safe to call more than once and on any Reply.
func (r Reply) Done() {
	if r.held != nil {
		r.held.give()
	}
	if r.release != nil {
		r.release()
	}
}
