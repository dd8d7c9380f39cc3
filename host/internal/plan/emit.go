package plan

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/skillhost/skillhost/host/internal/events"
)

// emit publishes a plan event: data plus execution_id, and step_id and
// attempt for a step event. Every event but progress carries a dedupe id
// (execution, type, step, attempt), so one re-published after a crash is
// stored once. Failures are logged; events never fail a plan. Within a
// step runner (ctx carries its eventQueue) the event is queued and stored
// in order behind the runner's back; elsewhere it is published at once.
func (m *Manager) emit(ctx context.Context, rec *Record, typ, stepID string, attempt int, data map[string]any) {
	if m.events == nil {
		return
	}
	if data == nil {
		data = map[string]any{}
	}
	data["execution_id"] = rec.ExecutionID
	id := rec.ExecutionID + "/" + typ
	if stepID != "" {
		data["step_id"], data["attempt"] = stepID, attempt
		id += "/" + stepID + "/" + strconv.Itoa(attempt)
	}
	if typ == events.PlanStepProgress {
		id = ""
	}
	raw, err := json.Marshal(data)
	if err != nil {
		m.log.Warn("plan: encoding an event failed", "type", typ, "err", err)
		return
	}
	ev := events.Event{ID: id, Type: typ, Owner: rec.Owner, SessionID: rec.SessionID, PlanID: rec.PlanID, Data: raw}
	if q, ok := ctx.Value(eventQueueKey{}).(*eventQueue); ok {
		q.put(ctx, ev)
		return
	}
	m.publishEvent(ctx, ev)
}

func (m *Manager) publishEvent(ctx context.Context, ev events.Event) {
	if _, err := m.events.Publish(ctx, ev); err != nil && ctx.Err() == nil {
		m.log.Warn("plan: publishing an event failed", "type", ev.Type, "plan_id", ev.PlanID, "err", err)
	}
}

const (
	// eventQueueLen bounds the events a step runner is ahead of the log.
	eventQueueLen = 64
	// eventWait bounds the publish of a queued event. A queued event is
	// published even when the step that emitted it was cancelled since
	// (its publish no longer follows the step's context).
	eventWait = 5 * time.Second
)

// eventQueue stores one step runner's events in the order emitted, so
// the runner does not wait for the event log's write (an fsync) of each:
// a step's events follow it by at most eventQueueLen. Before the runner
// hands its execution on (a job published, its job acknowledged or handed
// back) it flushes the queue, so every event of a step precedes those of
// the steps another runner starts after it.
type eventQueue struct {
	m    *Manager
	ch   chan queued
	done chan struct{}
	mu   sync.RWMutex // held to send on ch; stop closes ch under it
	shut bool         // ch is closed: an event emitted late is published at once
}

// queued is an event to publish with the context it was emitted with, or
// (flushed set) a flush marker.
type queued struct {
	ctx     context.Context
	ev      events.Event
	flushed chan struct{}
}

type eventQueueKey struct{}

// withEventQueue starts a queue for a step runner's events and returns
// ctx carrying it; stop flushes and ends it. Without an event sink ctx is
// returned as it is.
func (m *Manager) withEventQueue(ctx context.Context) (_ context.Context, stop func()) {
	if m.events == nil {
		return ctx, func() {}
	}
	q := &eventQueue{m: m, ch: make(chan queued, eventQueueLen), done: make(chan struct{})}
	go q.run()
	return context.WithValue(ctx, eventQueueKey{}, q), func() {
		q.mu.Lock()
		q.shut = true
		close(q.ch)
		q.mu.Unlock()
		<-q.done
	}
}

func (q *eventQueue) run() {
	defer close(q.done)
	for e := range q.ch {
		if e.flushed != nil {
			close(e.flushed)
			continue
		}
		ctx, cancel := context.WithTimeout(e.ctx, eventWait)
		q.m.publishEvent(ctx, e.ev)
		cancel()
	}
}

func (q *eventQueue) put(ctx context.Context, ev events.Event) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.shut { // e.g. a progress report that outlived its step's run
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventWait)
		defer cancel()
		q.m.publishEvent(ctx, ev)
		return
	}
	q.ch <- queued{ctx: context.WithoutCancel(ctx), ev: ev}
}

// flushEvents waits until the events queued on ctx's runner are stored
// (or failed).
func flushEvents(ctx context.Context) {
	q, ok := ctx.Value(eventQueueKey{}).(*eventQueue)
	if !ok {
		return
	}
	done := make(chan struct{})
	q.mu.RLock()
	if q.shut {
		q.mu.RUnlock()
		return
	}
	q.ch <- queued{flushed: done}
	q.mu.RUnlock()
	<-done
}
