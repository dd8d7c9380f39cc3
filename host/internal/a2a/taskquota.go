package a2a

import (
	"context"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Stored tasks per API key. Every task of a key (and of its session
// tokens) is charged to the key's usage (store.Usage): while it runs at the
// largest record it may grow to, once it ends at its size, until it
// expires. A new task is admitted only while the key stays within
// MaxPerKey tasks and MaxBytesPerKey bytes (-32106 key_quota), and, for
// every principal, while the bucket keeps Reserve bytes free above it
// (-32106 storage_full): the records of running tasks (their status
// changes, artifacts and terminal state) are written into that room, never
// refused for a quota. Local principals are not capped.

// DefaultMaxTasksPerKey is the default of TaskStoreConfig.MaxPerKey.
const DefaultMaxTasksPerKey = 10_000

// Configuration keys named in refusals.
const (
	limitTasksPerKey     = "a2a.max_tasks_per_key"
	limitTaskBytesPerKey = "a2a.max_task_bytes_per_key"
	limitTasksReserve    = "a2a.reserve"
)

// quotaDefaults fills the per-key quotas and the reserve, for a bucket of
// MaxBytes whose largest record costs bound.
func (cfg *TaskStoreConfig) quotaDefaults(bound int64) {
	if cfg.MaxPerKey <= 0 {
		cfg.MaxPerKey = DefaultMaxTasksPerKey
	}
	if cfg.MaxBytesPerKey <= 0 {
		cfg.MaxBytesPerKey = min(cfg.MaxBytes, max(cfg.MaxBytes/4, 2*bound))
	}
	if cfg.Reserve <= 0 {
		cfg.Reserve = cfg.MaxBytes / 8
	}
}

func openTaskUsage(ctx context.Context, st *store.Store, cfg TaskStoreConfig) (*store.Usage, error) {
	return st.OpenUsage(ctx, store.UsageConfig{
		Name: "tasks", Bucket: cfg.Bucket, MaxCount: cfg.MaxPerKey, MaxBytes: cfg.MaxBytesPerKey, Reserve: cfg.Reserve,
		CountLimit: limitTasksPerKey, BytesLimit: limitTaskBytesPerKey, ReserveLimit: limitTasksReserve,
	})
}

// Usage reports what owner's stored tasks count against its quotas.
func (s *TaskStore) Usage(ctx context.Context, owner string) (store.OwnerUsage, error) {
	return s.usage.Of(ctx, owner)
}

// bound is the largest task record, as a running task is charged.
func (s *TaskStore) bound() int64 { return taskBound(s.max) }

func taskBound(maxRecord int32) int64 { return int64(maxRecord) + MaxTaskIDLen + store.RecordOverhead }

// recordSize is what a task record of encoding b costs in the bucket.
func recordSize(id a2av1.TaskID, b []byte) int64 {
	return int64(len(id)+len(b)) + store.RecordOverhead
}

// Admit admits a new task of rec.Owner, capped when the caller's principal
// is (an API key or its token): -32106 key_quota over the key's quota,
// -32106 storage_full without room above the reserve. It records the charge
// in rec; the caller finishes the returned Pending once the record is
// written. A blocking SendMessage, whose task is stored only when it ends,
// admits it before it runs and drops the Pending (the final record is
// charged as it is written).
func (s *TaskStore) Admit(ctx context.Context, rec *Record) (*store.Pending, error) {
	p, err := s.usage.Admit(ctx, rec.Owner, auth.From(ctx).Limited(), rec.Quota, s.bound())
	if err != nil {
		return nil, err
	}
	rec.Quota = p.Charge()
	return p, nil
}

// charged encodes rec for its write in state next: a running task keeps
// its admitted charge, a terminal one is charged its size. The charge is
// committed before the caller writes b; the caller finishes p after, and
// restores rec.Quota to its previous value when the write failed and rec is
// written again.
func (s *TaskStore) charged(ctx context.Context, rec *Record, next TaskState) ([]byte, *store.Pending, error) {
	b, err := s.encode(rec)
	if err != nil {
		return nil, nil, err
	}
	fit := store.Running
	if next.IsTerminal() {
		fit = store.Final
	}
	prev := rec.Quota
	p := s.usage.Charge(ctx, rec.Owner, prev, recordSize(rec.Task.ID, b), fit)
	if c := p.Charge(); c != prev {
		rec.Quota = c
		if b, err = s.encode(rec); err != nil {
			p.Drop(ctx)
			rec.Quota = prev
			return nil, nil, err
		}
	}
	return b, p, nil
}
