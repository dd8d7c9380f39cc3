package a2a

import (
	"context"
	"io"
	"sync"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
)

// maxQueuedProgress bounds the progress events queued for one slow
// subscriber; beyond it progress events are dropped for that subscriber
// (task, artifact and status-change events are never dropped: a task emits
// only a handful of them).
const maxQueuedProgress = 256

// maxSubscribers bounds concurrent streams on one task.
const maxSubscribers = 64

// event is one task event with whether a slow subscriber may drop it.
type event struct {
	ev       a2av1.Event
	progress bool
	final    bool // the last event of the task's stream
}

// broker fans task events out, in order, to every subscriber of a task.
type broker struct {
	mu   sync.Mutex
	subs map[a2av1.TaskID]map[*subscription]struct{}
}

func newBroker() *broker {
	return &broker{subs: map[a2av1.TaskID]map[*subscription]struct{}{}}
}

// subscription is one stream's queue of events.
type subscription struct {
	b      *broker
	id     a2av1.TaskID
	mu     sync.Mutex
	queue  []event
	nprog  int
	closed bool
	wake   chan struct{}
}

// subscribe registers a subscriber for id; ok is false past maxSubscribers.
func (b *broker) subscribe(id a2av1.TaskID) (*subscription, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.subs[id]
	if set == nil {
		set = map[*subscription]struct{}{}
		b.subs[id] = set
	}
	if len(set) >= maxSubscribers {
		return nil, false
	}
	s := &subscription{b: b, id: id, wake: make(chan struct{}, 1)}
	set[s] = struct{}{}
	return s, true
}

// publish delivers e to every current subscriber of id.
func (b *broker) publish(id a2av1.TaskID, e event) {
	b.mu.Lock()
	subs := make([]*subscription, 0, len(b.subs[id]))
	for s := range b.subs[id] {
		subs = append(subs, s)
	}
	b.mu.Unlock()
	for _, s := range subs {
		s.push(e)
	}
}

func (s *subscription) push(e event) {
	s.mu.Lock()
	if s.closed || (e.progress && s.nprog >= maxQueuedProgress) {
		s.mu.Unlock()
		return
	}
	if e.progress {
		s.nprog++
	}
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next blocks for the next event; io.EOF after the final one or Close.
func (s *subscription) next(ctx context.Context) (event, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			e := s.queue[0]
			s.queue[0] = event{}
			s.queue = s.queue[1:]
			if e.progress {
				s.nprog--
			}
			if e.final {
				s.closed = true
			}
			s.mu.Unlock()
			return e, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return event{}, io.EOF
		}
		select {
		case <-ctx.Done():
			return event{}, ctx.Err()
		case <-s.wake:
		}
	}
}

// Close unregisters the subscription; pending events are discarded.
func (s *subscription) Close() error {
	s.mu.Lock()
	s.closed, s.queue = true, nil
	s.mu.Unlock()
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if set := s.b.subs[s.id]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(s.b.subs, s.id)
		}
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}
