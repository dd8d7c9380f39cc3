package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/store"
)

// Task events cross hosts through NATS. The host running a task publishes
// every event of it (status changes, progress, artifacts) to the JetStream
// stream EventsStream under EventsSubject+<task id>; a subscriber on any host
// reads them, in order, with an ordered consumer starting where its Task
// snapshot was taken. Cancels travel on core NATS (CancelSubject+<task id>)
// to whichever host runs the task. See docs/RATIONALE.md.
const (
	EventsStream  = "SKILLHOST_A2A_EVENTS"
	EventsSubject = "skillhost.a2a.events."
	CancelSubject = "skillhost.a2a.cancel."

	// eventsMaxAge and eventsPerTask bound what the stream keeps: a
	// subscriber resumes a task's events for an hour, the newest 1024.
	eventsMaxAge   = time.Hour
	eventsPerTask  = 1024
	eventsMaxBytes = 256 << 20
	// maxProgressPerTask bounds the progress events one task publishes; a
	// plugin reporting more has the rest dropped (its status changes and
	// artifacts are never dropped).
	maxProgressPerTask = 1000
	// maxSubscribers bounds concurrent streams on one task on one host.
	maxSubscribers = 64

	hdrFinal    = "Skillhost-Final"
	hdrProgress = "Skillhost-Progress"
)

// event is one task event; final marks the last event of the task's stream.
type event struct {
	ev       a2av1.Event
	progress bool
	final    bool
}

// events publishes and reads task events. It is safe for concurrent use.
type events struct {
	st  *store.Store // cancels (Signal, Listen)
	lg  *store.Log
	log *slog.Logger

	mu       sync.Mutex
	subs     map[a2av1.TaskID]int // open subscriptions per task on this host
	progress map[a2av1.TaskID]int // progress events published per running task
}

// openEvents creates or updates the events stream on st.
func openEvents(ctx context.Context, st *store.Store, log *slog.Logger) (*events, error) {
	lg, err := st.OpenLog(ctx, store.LogConfig{
		Name:          EventsStream,
		Description:   "skillhost A2A task events (status, progress, artifacts), for subscribers on any host",
		Subjects:      []string{EventsSubject + "*"},
		MaxAge:        eventsMaxAge,
		MaxPerSubject: eventsPerTask,
		MaxBytes:      eventsMaxBytes,
		Dedupe:        time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("a2a: events stream: %w", err)
	}
	return &events{st: st, lg: lg, log: log,
		subs: map[a2av1.TaskID]int{}, progress: map[a2av1.TaskID]int{}}, nil
}

// publish sends e for task id. Status changes and artifacts wait for the
// stream's acknowledgement; progress is fire-and-forget (same connection, so
// still in order) and capped per task.
func (b *events) publish(ctx context.Context, id a2av1.TaskID, e event) error {
	data, err := json.Marshal(a2av1.StreamResponse{Event: e.ev})
	if err != nil {
		return fmt.Errorf("a2a: encode event: %w", err)
	}
	entry := e.entry(id, data)
	if e.progress {
		b.mu.Lock()
		n := b.progress[id] + 1
		b.progress[id] = n
		b.mu.Unlock()
		if n > maxProgressPerTask {
			if n == maxProgressPerTask+1 {
				b.log.Warn("a2a: task reports too much progress; further progress events are dropped", "task_id", id, "max", maxProgressPerTask)
			}
			return nil
		}
		return b.lg.AppendNoWait(entry)
	}
	_, _, err = b.lg.Append(ctx, entry)
	return err
}

// entry is the log entry of e for task id.
func (e event) entry(id a2av1.TaskID, data []byte) store.LogEntry {
	entry := store.LogEntry{Subject: EventsSubject + string(id), Data: data}
	if e.final || e.progress {
		entry.Header = map[string]string{}
	}
	if e.final {
		entry.Header[hdrFinal] = "1"
	}
	if e.progress {
		entry.Header[hdrProgress] = "1"
	}
	return entry
}

// publishAsync sends e for task id without waiting for the stream's
// acknowledgement (in order with the connection's other publishes); a
// failure is only logged.
func (b *events) publishAsync(id a2av1.TaskID, e event) {
	data, err := json.Marshal(a2av1.StreamResponse{Event: e.ev})
	if err == nil {
		e.progress = false
		err = b.lg.AppendNoWait(e.entry(id, data))
	}
	if err != nil {
		b.log.Warn("a2a: task event not published", "task_id", id, "err", err)
	}
}

// done forgets a finished task's progress count.
func (b *events) done(id a2av1.TaskID) {
	b.mu.Lock()
	delete(b.progress, id)
	b.mu.Unlock()
}

// lastSeq is the stream sequence of the task's latest event (0: none yet).
func (b *events) lastSeq(ctx context.Context, id a2av1.TaskID) (uint64, error) {
	seq, err := b.lg.LastSeq(ctx, EventsSubject+string(id))
	if err != nil {
		return 0, fmt.Errorf("a2a: task events: %w", err)
	}
	return seq, nil
}

// subscribe reads the task's events after stream sequence after; ok is
// false when the task already has maxSubscribers streams on this host.
func (b *events) subscribe(ctx context.Context, id a2av1.TaskID, after uint64) (*subscription, bool, error) {
	b.mu.Lock()
	if b.subs[id] >= maxSubscribers {
		b.mu.Unlock()
		return nil, false, nil
	}
	b.subs[id]++
	b.mu.Unlock()
	r, err := b.lg.Read(ctx, store.ReadOptions{Subjects: []string{EventsSubject + string(id)}, After: after, Idle: 30 * time.Second})
	if err != nil {
		b.release(id)
		return nil, true, fmt.Errorf("a2a: subscribe to task events: %w", err)
	}
	return &subscription{b: b, id: id, r: r}, true, nil
}

func (b *events) release(id a2av1.TaskID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[id]--; b.subs[id] <= 0 {
		delete(b.subs, id)
	}
}

// subscription is one stream's view of a task's events.
type subscription struct {
	b    *events
	id   a2av1.TaskID
	r    *store.LogReader
	once sync.Once
	done bool // the final event was returned
}

// next blocks for the next event; io.EOF after the final one.
func (s *subscription) next(ctx context.Context) (event, error) {
	if s.done {
		return event{}, io.EOF
	}
	for {
		m, err := s.r.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return event{}, ctx.Err()
			}
			if errors.Is(err, store.ErrLogClosed) {
				return event{}, io.EOF
			}
			return event{}, fmt.Errorf("a2a: task events: %w", err)
		}
		var sr a2av1.StreamResponse
		if err := json.Unmarshal(m.Data, &sr); err != nil || sr.Event == nil {
			s.b.log.Warn("a2a: undecodable task event skipped", "task_id", s.id, "err", err)
			continue
		}
		e := event{ev: sr.Event, final: m.Header[hdrFinal] != "", progress: m.Header[hdrProgress] != ""}
		s.done = e.final
		return e, nil
	}
}

// Close stops reading (the task goes on).
func (s *subscription) Close() error {
	s.once.Do(func() {
		_ = s.r.Close()
		s.b.release(s.id)
	})
	return nil
}
