package a2a

import (
	"context"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/config"
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

// Configuration keys named in refusals.
const (
	limitTasksPerKey     = "a2a.max_tasks_per_key"
	limitTaskBytesPerKey = "a2a.max_task_bytes_per_key"
	limitTasksReserve    = "a2a.reserve"
)

// resolveQuotas resolves a zero a2a.max_task_bytes_per_key and a2a.reserve
// from the bucket's size (a quarter, at least two of the largest records
// whose cost is bound; an eighth).
func (cfg *TaskStoreConfig) resolveQuotas(bound int64) {
	bucket := int64(cfg.MaxBucket)
	if cfg.MaxTaskBytesPerKey <= 0 {
		cfg.MaxTaskBytesPerKey = config.ByteSize(min(bucket, max(bucket/4, 2*bound)))
	}
	if cfg.Reserve <= 0 {
		cfg.Reserve = config.ByteSize(bucket / 8)
	}
}

func openTaskUsage(ctx context.Context, st *store.Store, cfg TaskStoreConfig) (*store.Usage, error) {
	return st.OpenUsage(ctx, store.UsageConfig{
		Name: "tasks", Bucket: cfg.Bucket, MaxCount: cfg.MaxTasksPerKey, MaxBytes: int64(cfg.MaxTaskBytesPerKey), Reserve: int64(cfg.Reserve),
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
// written.
func (s *TaskStore) Admit(ctx context.Context, rec *Record) (*store.Pending, error) {
	return s.admit(ctx, rec, 0)
}

// AdmitLive admits the task of a blocking SendMessage, stored only when it
// ends (CreateFinal charges that record): before it runs, charged for the
// live bucket's TTL, so a host that dies with it running leaves its key
// over-counted for an hour, not for the task retention.
func (s *TaskStore) AdmitLive(ctx context.Context, rec *Record) error {
	_, err := s.admit(ctx, rec, liveTTL)
	return err
}

func (s *TaskStore) admit(ctx context.Context, rec *Record, keep time.Duration) (*store.Pending, error) {
	p, err := s.usage.AdmitFor(ctx, rec.Owner, auth.From(ctx).Limited(), rec.Quota, s.bound(), keep)
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
