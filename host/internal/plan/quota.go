package plan

import (
	"context"
	"encoding/base64"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Stored plans per API key. Every plan of a key (and of its session
// tokens) is charged to the key's usage (store.Usage): while it executes at
// the largest record it may grow to (MaxRecordBytes), otherwise at its
// size, until it expires. plan/create and plan/execute are admitted only
// while the key stays within MaxPerKey plans and MaxBytesPerKey bytes
// (-32106 key_quota), and, for every principal, while the bucket keeps
// Reserve bytes free above them (-32106 storage_full): the checkpoints of
// executing plans are written into that room, never refused for a quota.
// Local principals are not capped.

// Configuration keys named in refusals.
const (
	limitPlansPerKey     = "plans.max_per_key"
	limitPlanBytesPerKey = "plans.max_bytes_per_key"
	limitPlansReserve    = "plans.reserve"
)

// maxKeyBytes is the longest bucket key of a plan (see key).
var maxKeyBytes = int64(base64.RawURLEncoding.EncodedLen(store.MaxSessionIDLen) + 1 +
	base64.RawURLEncoding.EncodedLen(MaxPlanIDBytes))

func openPlanUsage(ctx context.Context, st *store.Store, cfg settings) (*store.Usage, error) {
	return st.OpenUsage(ctx, store.UsageConfig{
		Name: "plans", Bucket: Bucket, MaxCount: cfg.MaxPerKey, MaxBytes: int64(cfg.MaxBytesPerKey), Reserve: int64(cfg.Reserve),
		CountLimit: limitPlansPerKey, BytesLimit: limitPlanBytesPerKey, ReserveLimit: limitPlansReserve,
	})
}

// Usage reports what owner's stored plans count against its quotas.
func (m *Manager) Usage(ctx context.Context, owner string) (store.OwnerUsage, error) {
	return m.recs.usage.Of(ctx, owner)
}

// bound is the largest plan record, as an executing plan is charged.
func (r *records) bound() int64 { return int64(r.max) + maxKeyBytes + store.RecordOverhead }

// recordSize is what a plan record of encoding b at key k costs in the
// bucket.
func recordSize(k string, b []byte) int64 { return int64(len(k)+len(b)) + store.RecordOverhead }

// admit admits new work on rec of at most bound bytes (a new plan at its
// size, an execution starting at the largest record), capped when the
// caller's principal is (an API key or its token), and records its charge
// in rec; the caller finishes the Pending once rec is written.
func (r *records) admit(ctx context.Context, rec *Record, bound int64) (*store.Pending, error) {
	p, err := r.usage.Admit(ctx, rec.Owner, auth.From(ctx).Limited(), rec.Quota, bound)
	if err != nil {
		return nil, err
	}
	rec.Quota = p.Charge()
	return p, nil
}

// charged encodes rec (at key k) for its write after before: an execution
// that starts is admitted (admit), an executing plan keeps its charge, a
// plan at rest is charged its size. The caller writes b and finishes p.
func (r *records) charged(ctx context.Context, before shape, rec *Record, k string) ([]byte, *store.Pending, error) {
	prev := rec.Quota
	if before.status != StatusExecuting && rec.Status == StatusExecuting {
		p, err := r.admit(ctx, rec, r.bound())
		if err != nil {
			return nil, nil, err
		}
		b, err := r.encode(rec)
		if err != nil {
			p.Drop(ctx)
			return nil, nil, err
		}
		return b, p, nil
	}
	b, err := r.encode(rec)
	if err != nil {
		return nil, nil, err
	}
	fit := store.Settled
	if rec.Status == StatusExecuting {
		fit = store.Running
	}
	p := r.usage.Charge(ctx, rec.Owner, prev, recordSize(k, b), fit)
	if c := p.Charge(); c != prev {
		rec.Quota = c
		if b, err = r.encode(rec); err != nil {
			p.Drop(ctx)
			return nil, nil, err
		}
	}
	return b, p, nil
}
