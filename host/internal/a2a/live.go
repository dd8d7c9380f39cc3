package a2a

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

// A blocking SendMessage acknowledges its task only in the reply that
// carries the final state, so only that state has to be durable before the
// reply: the task is written once, terminal, to the tasks bucket (with its
// index key, both in parallel). While it runs it is visible — to its
// owner's GetTask, ListTasks, CancelTask and SubscribeToTask on any host —
// through a record in the live bucket, which is kept in memory (no fsync)
// and deleted once the final record is stored. Creating the final record is
// the one arbiter between the task's end and a CancelTask: both try to
// create it and the first wins, so a task never ends twice. A host that
// dies with a live task leaves its live record (never acknowledged, nothing
// is lost) until the bucket's TTL removes it; CancelTask can still end it.
// The task is admitted (its key's quota, the bucket's reserve) before it
// runs, charged for the live TTL, and charged its final size when the final
// record is stored (taskquota.go). See docs/RATIONALE.md.

// Live bucket settings.
const (
	LiveBucket      = "skillhost_a2a_live"
	liveTTL         = time.Hour // longer than any task runs (policy.max_timeout caps calls)
	liveBucketBytes = 64 << 20
)

// liveKey is the live bucket key of a task: its owner's hash and its id, so
// a caller reads only its own live tasks.
func liveKey(owner string, id a2av1.TaskID) string {
	return hashToken("owner:"+owner) + "." + string(id)
}

func openLive(ctx context.Context, st *store.Store, maxValue int32) (*store.Bucket[Record], error) {
	return store.OpenBucket[Record](ctx, st, store.BucketConfig{
		Name: LiveBucket, Description: "skillhost A2A tasks of blocking SendMessage calls while they run (memory)",
		TTL: liveTTL, MaxValueBytes: maxValue, MaxBytes: liveBucketBytes, Memory: true, What: "live a2a task",
	})
}

// putLive records a running task without waiting for the store (a KV put
// published on the connection, unacknowledged): the live record only makes
// the task visible, and its owner learns the id from the final reply. A
// failure (the bucket is full) leaves the task invisible until it ends.
func (s *TaskStore) putLive(rec *Record) {
	if err := s.live.PutNoWait(liveKey(rec.Owner, rec.Task.ID), rec); err != nil {
		s.log.Debug("a2a: live task record not written", "task_id", rec.Task.ID, "err", err)
	}
}

// dropLive purges a task's live record without waiting (a KV purge, ADR-8:
// the operation header and a subject rollup): the final record, which
// readers prefer, is already stored, and the bucket's TTL removes a record
// whose purge is lost.
func (s *TaskStore) dropLive(owner string, id a2av1.TaskID) {
	if err := s.live.PurgeNoWait(liveKey(owner, id)); err != nil {
		s.log.Debug("a2a: live task record not purged (its TTL will)", "task_id", id, "err", err)
	}
}

// getLive returns the live record of owner's task id (nil if none).
func (s *TaskStore) getLive(ctx context.Context, owner string, id a2av1.TaskID) (*Record, error) {
	e, err := s.live.Get(ctx, liveKey(owner, id))
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUndecodable) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: read live task: %w", err)
	}
	if rec := e.Value; rec.Task != nil && rec.Owner == owner {
		return rec, nil
	}
	return nil, nil
}

// Owned returns owner's task id: its stored record, or, while a blocking
// SendMessage runs it, its live record. The live record is read first: a
// task that ends in between is then found stored, never missed.
func (s *TaskStore) Owned(ctx context.Context, owner string, id a2av1.TaskID) (rec *Record, live bool, err error) {
	if err := checkTaskID(id); err != nil {
		return nil, false, err
	}
	lrec, err := s.getLive(ctx, owner, id)
	if err != nil {
		return nil, false, err
	}
	rec, err = s.Get(ctx, id)
	var fe *fault.Error
	if lrec != nil && errors.As(err, &fe) && fe.Kind == fault.TaskNotFound {
		return lrec, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return rec, false, nil
}

// CreateFinal stores a task that a blocking SendMessage ran (or that
// CancelTask ended while it ran) in its terminal state: its index key and
// its record, written in parallel, both durable when it returns. A record
// too large to store, or one the bucket has no room for, fails the task
// instead, without its artifacts (output_limit, storage_full). If the task
// was already stored (the other side of a cancel race won), the stored
// record is returned with won false.
func (s *TaskStore) CreateFinal(ctx context.Context, rec *Record) (stored *Record, won bool, err error) {
	rec.Updated = time.Now().UTC()
	stored, won, err = s.createFinal(ctx, rec)
	if errors.Is(err, fault.New(fault.ResourceExhausted, fault.ReasonStorageFull, "")) && len(rec.Task.Artifacts) > 0 {
		if ferr := s.failWithout(rec, err); ferr != nil {
			return nil, false, ferr
		}
		return s.createFinal(ctx, rec)
	}
	return stored, won, err
}

func (s *TaskStore) createFinal(ctx context.Context, rec *Record) (stored *Record, won bool, err error) {
	prev := rec.Quota
	b, p, err := s.charged(ctx, rec, rec.State())
	if err != nil && errors.Is(err, fault.New(fault.ResourceExhausted, fault.ReasonOutputLimit, "")) {
		if err = s.failWithout(rec, err); err == nil {
			b, p, err = s.charged(ctx, rec, rec.State())
		}
	}
	if err != nil {
		return nil, false, err
	}
	var wg sync.WaitGroup
	var indexErr error
	wg.Go(func() { indexErr = s.putIndex(ctx, rec) })
	_, err = s.kv.CreateRaw(ctx, string(rec.Task.ID), b)
	wg.Wait()
	p.Finish(ctx, err)
	if errors.Is(err, store.ErrExists) {
		cur, gerr := s.Get(ctx, rec.Task.ID)
		if gerr == nil && indexKey(cur) != indexKey(rec) {
			s.dropIndex(ctx, indexKey(rec))
		}
		return cur, false, gerr
	}
	if err != nil {
		s.dropIndex(ctx, indexKey(rec))
		rec.Quota = prev // what the ledger holds for the task, should it be written again
		return nil, false, err
	}
	if indexErr != nil { // stored but not listed: report it rather than acknowledge it
		return nil, false, indexErr
	}
	return rec, true, nil
}

// failWithout turns rec, which cannot be stored as it is, into a failed
// task without artifacts whose status message says why.
func (s *TaskStore) failWithout(rec *Record, cause error) error {
	rec.Task.Artifacts = nil
	rec.Task.Status.State = StateFailed.Wire()
	rec.Task.Status.Message = errorMessage(rec.Task, cause)
	return s.resignFailed(rec)
}

// liveEntries lists owner's live tasks matching q, with their records.
func (s *TaskStore) liveEntries(ctx context.Context, q ListQuery) ([]indexEntry, error) {
	var out []indexEntry
	for key, err := range s.live.Keys(ctx, hashToken("owner:"+q.Owner)+".*") {
		if err != nil {
			return nil, fmt.Errorf("a2a: list live tasks: %w", err)
		}
		e, err := s.live.Get(ctx, key)
		if err != nil {
			continue // ended meanwhile, or undecodable
		}
		rec := e.Value
		if rec.Task == nil || rec.Owner != q.Owner || !q.matches(rec) {
			continue
		}
		out = append(out, indexEntry{key: key, state: rec.State().V03(), updated: rec.Updated.UnixNano(), id: rec.Task.ID, rec: rec})
		if len(out) >= maxListScan {
			break
		}
	}
	return out, ctx.Err()
}

// matches applies q's filters (all but the owner) to a record.
func (q ListQuery) matches(rec *Record) bool {
	switch {
	case q.ContextID != "" && rec.Task.ContextID != q.ContextID:
		return false
	case q.Status != "" && q.Status != StateUnspecified && rec.State() != q.Status:
		return false
	case q.Tenant != "" && rec.Tenant != q.Tenant:
		return false
	case q.After != nil && rec.Updated.UnixNano() <= q.After.UnixNano():
		return false
	}
	return true
}
