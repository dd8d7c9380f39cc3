package jsonrpc

import (
	"bytes"
	"context"
	"sync"

	"github.com/skillhost/skillhost/host/fault"
)

// batchBytes is one batch's aggregate response cap. Once an element's
// response does not fit, the batch is full: that element and every element
// that completes later get -32106 output_limit, and elements not started yet
// are not run at all.
type batchBytes struct {
	max int

	mu   sync.Mutex
	used int
	full bool
}

// take admits n more response bytes, or marks the batch full.
func (b *batchBytes) take(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.full || b.used+n > b.max {
		b.full = true
		return false
	}
	b.used += n
	return true
}

func (b *batchBytes) isFull() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.full
}

func (e *Engine) handleBatch(ctx context.Context, body []byte) Reply {
	elems, ferr := splitBatch(body, e.maxBatch)
	if ferr != nil {
		return e.errorReply(ctx, nil, Envelope{}, ferr)
	}
	out := make([][]byte, len(elems))
	holds := make([]*held, len(elems))
	room := &batchBytes{max: e.maxBatchResponse}
	sem := make(chan struct{}, e.batchConc)
	var wg sync.WaitGroup
	for i, raw := range elems {
		req, echo, ferr := decodeRequestIn(raw, e.methodName)
		if ferr != nil {
			out[i] = e.errorReply(ctx, echo, Envelope{}, ferr).Body
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], holds[i] = e.batchElement(ctx, req, room)
		})
	}
	wg.Wait()

	var buf bytes.Buffer
	for _, b := range out {
		if b == nil {
			continue
		}
		if buf.Len() == 0 {
			buf.WriteByte('[')
		} else {
			buf.WriteByte(',')
		}
		buf.Write(b)
	}
	release := func() {
		for _, r := range holds {
			if r != nil {
				r.give()
			}
		}
	}
	if buf.Len() == 0 {
		release()
		return Reply{}
	}
	buf.WriteByte(']')
	return Reply{Body: buf.Bytes(), release: sync.OnceFunc(release)}
}

// batchElement runs one request of a batch and returns its response (nil
// for a notification) and the release of the response bytes it holds in the
// host-wide budget.
func (e *Engine) batchElement(ctx context.Context, req *Request, room *batchBytes) ([]byte, *held) {
	if room.isFull() && !req.IsNotification() {
		return e.requestError(ctx, req, e.batchFull()).Body, nil
	}
	res, err := e.call(ctx, req, false)
	if e.refuseStream(ctx, req, res) && err == nil {
		err = fault.Newf(fault.InvalidRequest, fault.ReasonStreamBatch,
			"method %q streams its result; call it alone, not in a batch", req.Method)
	}
	if req.IsNotification() {
		return nil, nil
	}
	var body []byte
	if err != nil {
		body = e.requestError(ctx, req, err).Body
	} else {
		body = e.result(ctx, req, res)
	}
	if !room.take(len(body)) {
		return e.requestError(ctx, req, e.batchFull()).Body, nil
	}
	return e.hold(ctx, req, body)
}

func (e *Engine) batchFull() error {
	return fault.Newf(fault.ResourceExhausted, fault.ReasonOutputLimit,
		"the batch's responses exceed %d bytes; send the rest again in smaller batches", e.maxBatchResponse).
		With("max_batch_response_bytes", e.maxBatchResponse)
}
