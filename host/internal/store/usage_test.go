package store_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
)

// accounted is the bucket the usage tests account for.
const accounted = "usage_test_records"

// mustAccounted creates the accounted bucket: records expire an hour after
// their last write, at most maxBytes in all.
func mustAccounted(t *testing.T, st *store.Store, maxBytes int64) jetstream.KeyValue {
	t.Helper()
	kv, err := st.KeyValue(testCtx(t), jetstream.KeyValueConfig{Bucket: accounted, History: 1, TTL: time.Hour, MaxBytes: maxBytes})
	if err != nil {
		t.Fatalf("KeyValue: %v", err)
	}
	return kv
}

func mustUsageOf(t *testing.T, st *store.Store, cfg store.UsageConfig) *store.Usage {
	t.Helper()
	cfg.Name, cfg.Bucket = "records", accounted
	cfg.CountLimit, cfg.BytesLimit, cfg.ReserveLimit = "test.max_per_key", "test.max_bytes_per_key", "test.reserve"
	u, err := st.OpenUsage(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("OpenUsage: %v", err)
	}
	return u
}

func mustOwnerUsage(t *testing.T, u *store.Usage, owner string) store.OwnerUsage {
	t.Helper()
	got, err := u.Of(testCtx(t), owner)
	if err != nil {
		t.Fatalf("Of(%s): %v", owner, err)
	}
	return got
}

// refusal is the kind, reason and named limit of an admission error.
type refusal struct {
	Kind   fault.Kind
	Reason string
	Limit  any
}

func refusalOf(t *testing.T, err error) refusal {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *fault.Error", err, err)
	}
	return refusal{fe.Kind, fe.Reason, fe.Data["limit"]}
}

// A key at its count or byte quota is refused with key_quota naming the
// quota; another key is admitted as before, and an uncapped owner is not
// held to the quota at all.
func TestUsageQuotaIsPerOwner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   store.UsageConfig
		bound int64
		fits  int
		limit string
	}{
		{"count", store.UsageConfig{MaxCount: 5, MaxBytes: 1 << 20}, 1000, 5, "test.max_per_key"},
		{"bytes", store.UsageConfig{MaxCount: 1000, MaxBytes: 10_000}, 3000, 3, "test.max_bytes_per_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := mustOpen(t, store.Config{})
			mustAccounted(t, st, 8<<20)
			u := mustUsageOf(t, st, tt.cfg)
			ctx := testCtx(t)
			for i := range tt.fits {
				if _, err := u.Admit(ctx, "key:alice", true, store.Charge{}, tt.bound); err != nil {
					t.Fatalf("alice's admission %d: %v", i, err)
				}
			}
			_, err := u.Admit(ctx, "key:alice", true, store.Charge{}, tt.bound)
			want := refusal{fault.ResourceExhausted, fault.ReasonKeyQuota, tt.limit}
			if diff := cmp.Diff(want, refusalOf(t, err)); diff != "" {
				t.Errorf("alice over her quota (-want +got):\n%s", diff)
			}
			if _, err := u.Admit(ctx, "key:bob", true, store.Charge{}, tt.bound); err != nil {
				t.Errorf("bob refused while alice is at her quota: %v", err)
			}
			for range tt.fits + 1 {
				if _, err := u.Admit(ctx, "local:stdio", false, store.Charge{}, tt.bound); err != nil {
					t.Fatalf("uncapped owner refused: %v", err)
				}
			}
			want2 := store.OwnerUsage{Records: int64(tt.fits), Bytes: int64(tt.fits) * tt.bound}
			if diff := cmp.Diff(want2, mustOwnerUsage(t, u, "key:alice")); diff != "" {
				t.Errorf("alice's usage (-want +got):\n%s", diff)
			}
		})
	}
}

// Two hosts (two connections, each with its own Usage) admitting for one
// key at once never let it past its quota: exactly the quota is admitted.
func TestUsageHoldsAcrossHostsUnderConcurrency(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 1)
	const quota, tries = 12, 40
	var hosts []*store.Usage
	for range 2 {
		st := mustOpenCluster(t, store.Config{URL: c.URL()})
		mustAccounted(t, st, 8<<20)
		hosts = append(hosts, mustUsageOf(t, st, store.UsageConfig{MaxCount: quota, MaxBytes: 1 << 20}))
	}
	ctx := testCtx(t)
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			_, err := hosts[i%2].Admit(ctx, "key:alice", true, store.Charge{}, 100)
			switch {
			case err == nil:
				admitted.Add(1)
			case errors.Is(err, &fault.Error{Kind: fault.ResourceExhausted, Reason: fault.ReasonKeyQuota}):
				refused.Add(1)
			default:
				t.Errorf("admission: %v", err)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != quota || refused.Load() != tries-quota {
		t.Errorf("admitted %d, refused %d; want %d and %d", admitted.Load(), refused.Load(), quota, tries-quota)
	}
	for i, u := range hosts {
		if got := mustOwnerUsage(t, u, "key:alice"); got.Records != quota {
			t.Errorf("host %d counts %d records, want %d", i, got.Records, quota)
		}
	}
}

// What a key holds is stored with the state: a restarted host (the store
// reopened on its data directory) still refuses the key at its quota.
func TestUsageSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := store.UsageConfig{MaxCount: 3, MaxBytes: 1 << 20}
	open := func() (*store.Store, *store.Usage) {
		st, err := store.Open(testCtx(t), store.Config{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		mustAccounted(t, st, 8<<20)
		return st, mustUsageOf(t, st, cfg)
	}
	st, u := open()
	for range 3 {
		if _, err := u.Admit(testCtx(t), "key:alice", true, store.Charge{}, 500); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, u = open()
	t.Cleanup(func() { _ = st.Close() })
	if diff := cmp.Diff(store.OwnerUsage{Records: 3, Bytes: 1500}, mustOwnerUsage(t, u, "key:alice")); diff != "" {
		t.Errorf("usage after restart (-want +got):\n%s", diff)
	}
	_, err := u.Admit(testCtx(t), "key:alice", true, store.Charge{}, 500)
	if got := refusalOf(t, err).Reason; got != fault.ReasonKeyQuota {
		t.Errorf("after restart alice at her quota got %q, want key_quota", got)
	}
}

// A charge stops counting once the bucket has expired its record (its TTL
// passed): the key is admitted again without anyone deleting anything.
func TestUsageExpiredRecordsStopCounting(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	mustAccounted(t, st, 8<<20)
	var now atomic.Int64
	now.Store(time.Now().Unix())
	u := mustUsageOf(t, st, store.UsageConfig{MaxCount: 2, MaxBytes: 1 << 20,
		Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	ctx := testCtx(t)
	for range 2 {
		if _, err := u.Admit(ctx, "key:alice", true, store.Charge{}, 100); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := u.Admit(ctx, "key:alice", true, store.Charge{}, 100); err == nil {
		t.Fatal("admitted over the quota")
	}
	now.Add(int64(time.Hour / time.Second)) // the TTL: the server may not have removed them yet
	if _, err := u.Admit(ctx, "key:alice", true, store.Charge{}, 100); err == nil {
		t.Fatal("a charge stopped counting before its record can have expired")
	}
	now.Add(int64(10 * time.Minute / time.Second))
	if _, err := u.Admit(ctx, "key:alice", true, store.Charge{}, 100); err != nil {
		t.Fatalf("after the records expired: %v", err)
	}
	if got := mustOwnerUsage(t, u, "key:alice"); got.Records != 1 {
		t.Errorf("usage after expiry: %+v, want the one new record", got)
	}
}

// Work admitted for a shorter time than the bucket's retention (a task
// stored only when it ends) stops counting after that time when its record
// was never written (its host died), and counts for the whole retention
// once its record is.
func TestUsageAdmitForExpiresUnwrittenWork(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	mustAccounted(t, st, 8<<20)
	var now atomic.Int64
	now.Store(time.Now().Unix())
	u := mustUsageOf(t, st, store.UsageConfig{MaxCount: 10, MaxBytes: 1 << 20,
		Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	ctx := testCtx(t)
	lost, err := u.AdmitFor(ctx, "key:alice", true, store.Charge{}, 5000, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = lost // its host died: the record is never written
	done, err := u.AdmitFor(ctx, "key:alice", true, store.Charge{}, 5000, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p := u.Charge(ctx, "key:alice", done.Charge(), 700, store.Final)
	p.Finish(ctx, nil) // its record was written, terminal
	now.Add(int64(20 * time.Minute / time.Second))
	if diff := cmp.Diff(store.OwnerUsage{Records: 1, Bytes: 700}, mustOwnerUsage(t, u, "key:alice")); diff != "" {
		t.Errorf("usage after the unwritten work's time (-want +got):\n%s", diff)
	}
}

// The charge of a record follows its writes: running work keeps its bound,
// a final write is charged its size once stored, a write that did not land
// leaves the previous charge, and nothing is counted twice.
func TestUsageChargeFollowsWrites(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	kv := mustAccounted(t, st, 8<<20)
	u := mustUsageOf(t, st, store.UsageConfig{MaxCount: 10, MaxBytes: 1 << 20})
	ctx := testCtx(t)
	const owner = "key:alice"
	want := func(step string, records, bytes int64) {
		t.Helper()
		if diff := cmp.Diff(store.OwnerUsage{Records: records, Bytes: bytes}, mustOwnerUsage(t, u, owner)); diff != "" {
			t.Errorf("%s: usage (-want +got):\n%s", step, diff)
		}
	}
	p, err := u.Admit(ctx, owner, true, store.Charge{}, 50_000)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Create(ctx, "r1", []byte("submitted"))
	p.Finish(ctx, err)
	if err != nil {
		t.Fatal(err)
	}
	want("admitted", 1, 50_000)
	charge := p.Charge()

	p = u.Charge(ctx, owner, charge, 900, store.Running)
	if p.Charge() != charge {
		t.Errorf("a running write changed the charge: %+v -> %+v", charge, p.Charge())
	}
	rev2, err := kv.Update(ctx, "r1", []byte("working"), rev)
	p.Finish(ctx, err)
	want("running", 1, 50_000)

	lost := u.Charge(ctx, owner, charge, 1200, store.Final)
	_, err = kv.Update(ctx, "r1", []byte("stale"), rev) // a writer that lost the race
	if !store.Conflict(err) {
		t.Fatalf("stale update: %v, want a conflict", err)
	}
	lost.Finish(ctx, err)
	want("after a lost final write", 1, 50_000)

	p = u.Charge(ctx, owner, charge, 1200, store.Final)
	_, err = kv.Update(ctx, "r1", []byte("completed"), rev2)
	p.Finish(ctx, err)
	if err != nil {
		t.Fatal(err)
	}
	want("final", 1, 1200)

	p = u.Charge(ctx, owner, p.Charge(), 1500, store.Settled)
	if got := p.Charge().Bytes; got < 1500 {
		t.Errorf("a settled write of 1500 bytes is charged %d", got)
	}
	p.Finish(ctx, nil)
	want("settled", 1, p.Charge().Bytes)
}

// A bucket at its size is storage_full for every write — store.Fault maps
// JetStream's refusal in one place — and admission refuses new work (every
// owner, capped or not) while it would eat into the reserve.
func TestUsageFullBucket(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	const size = 1 << 20
	kv := mustAccounted(t, st, size)
	ctx := testCtx(t)
	value := make([]byte, 16<<10)
	var err error
	for i := 0; err == nil; i++ {
		if i > 2*size/len(value) {
			t.Fatal("the bucket never filled up")
		}
		_, err = kv.Put(ctx, fmt.Sprintf("k%d", i), value)
	}
	if !store.Full(err) || !store.Refused(err) {
		t.Errorf("write to a full bucket: %v; want Full and Refused", err)
	}
	want := refusal{fault.ResourceExhausted, fault.ReasonStorageFull, nil}
	if diff := cmp.Diff(want, refusalOf(t, store.Fault(err, "put"))); diff != "" {
		t.Errorf("store.Fault of a full bucket (-want +got):\n%s", diff)
	}
	u := mustUsageOf(t, st, store.UsageConfig{MaxCount: 1000, MaxBytes: size, Reserve: size / 4})
	for _, capped := range []bool{true, false} {
		_, err := u.Admit(ctx, "key:bob", capped, store.Charge{}, 1000)
		want := refusal{fault.ResourceExhausted, fault.ReasonStorageFull, "test.reserve"}
		if diff := cmp.Diff(want, refusalOf(t, err)); diff != "" {
			t.Errorf("admission into a full bucket, capped %v (-want +got):\n%s", capped, diff)
		}
	}
}

// A configured bucket size applies to a bucket that exists already (the
// next start after a change), in both directions.
func TestKeyValueAppliesMaxBytes(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	for _, size := range []int64{4 << 20, 16 << 20, 2 << 20} {
		if _, err := st.KeyValue(testCtx(t), jetstream.KeyValueConfig{Bucket: accounted, History: 1, MaxBytes: size}); err != nil {
			t.Fatalf("KeyValue(MaxBytes %d): %v", size, err)
		}
		stream, err := st.JetStream().Stream(testCtx(t), "KV_"+accounted)
		if err != nil {
			t.Fatal(err)
		}
		if got := stream.CachedInfo().Config.MaxBytes; got != size {
			t.Errorf("bucket size %d after asking for %d", got, size)
		}
	}
}

// A record whose charge moves (a plan executed again) is one record while
// its write is in flight: a key one below its count quota still creates
// its next record meanwhile; the move's bytes stay until the write is
// known, and a write that never happened puts the old charge back.
func TestUsageMoveIsOneRecord(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	mustAccounted(t, st, 8<<20)
	u := mustUsageOf(t, st, store.UsageConfig{MaxCount: 2, MaxBytes: 1 << 20})
	ctx := testCtx(t)
	const owner = "key:alice"
	want := func(step string, records, bytes int64) {
		t.Helper()
		if diff := cmp.Diff(store.OwnerUsage{Records: records, Bytes: bytes}, mustOwnerUsage(t, u, owner)); diff != "" {
			t.Errorf("%s: usage (-want +got):\n%s", step, diff)
		}
	}
	first, err := u.Admit(ctx, owner, true, store.Charge{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	first.Finish(ctx, nil)

	moving, err := u.Admit(ctx, owner, true, first.Charge(), 50_000)
	if err != nil {
		t.Fatal(err)
	}
	want("while the move is written", 1, 51_000)
	second, err := u.Admit(ctx, owner, true, store.Charge{}, 1000)
	if err != nil {
		t.Fatalf("a new record while another one's charge moves: %v, want admitted (1 of 2 held)", err)
	}
	second.Drop(ctx)
	moving.Drop(ctx)
	want("after a move that was not written", 1, 1000)

	moving, err = u.Admit(ctx, owner, true, first.Charge(), 50_000)
	if err != nil {
		t.Fatal(err)
	}
	moving.Finish(ctx, nil)
	want("after the move landed", 1, 50_000)
}
