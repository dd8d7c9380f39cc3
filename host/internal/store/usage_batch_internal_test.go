package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Updates of one owner queued while its ledger is being written go out
// together in the next write, in order, each with its own outcome: of ten
// admissions against a quota of five, the first five are admitted and the
// others refused, in two ledger writes instead of ten.
func TestUsageBatchesOneOwnersUpdates(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := Open(ctx, Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "batch_test_records", History: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	u, err := st.OpenUsage(ctx, UsageConfig{Name: "records", Bucket: "batch_test_records", MaxCount: 5, MaxBytes: 1 << 20,
		CountLimit: "test.max_per_key", BytesLimit: "test.max_bytes_per_key", ReserveLimit: "test.reserve"})
	if err != nil {
		t.Fatal(err)
	}
	const owner, waiting = "key:alice", 9
	key := u.key(owner)
	queued := func() int {
		u.queues.mu.Lock()
		defer u.queues.mu.Unlock()
		if q := u.queues.owners[key]; q != nil {
			return len(q.pending)
		}
		return 0
	}
	// The first update holds its batch's write until the others queue.
	first := make(chan error, 1)
	go func() {
		first <- u.update(ctx, owner, func(*usageLedger, int64) error {
			for queued() < waiting {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Millisecond):
				}
			}
			return ErrUnchanged // writes nothing itself
		})
	}()
	for queued() != 0 || !u.busy(key) {
		time.Sleep(time.Millisecond)
	}
	errs := make([]error, waiting)
	var wg sync.WaitGroup
	for i := range waiting {
		wg.Go(func() {
			_, errs[i] = u.Admit(ctx, owner, true, Charge{}, 100)
		})
		for i < waiting-1 && queued() < i+1 { // queue them in a known order
			select {
			case err := <-first:
				t.Fatalf("first update ended before the others queued: %v", err)
			case <-time.After(time.Millisecond):
			}
		}
	}
	wg.Wait()
	if err := <-first; !errors.Is(err, ErrUnchanged) {
		t.Fatalf("first update: %v", err)
	}
	admitted := 0
	for i, err := range errs {
		switch {
		case err == nil:
			admitted++
			if i >= 5 {
				t.Errorf("admission %d admitted after the quota's five", i)
			}
		case i < 5:
			t.Errorf("admission %d refused within the quota: %v", i, err)
		}
	}
	if admitted != 5 {
		t.Errorf("%d admitted, want 5", admitted)
	}
	e, err := u.kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Value.total(time.Now().Unix()).Records; got != 5 {
		t.Errorf("ledger counts %d records, want 5", got)
	}
	// One write for the nine queued admissions (the first update wrote
	// nothing): the ledger's only revision.
	if e.Revision != 1 {
		t.Errorf("ledger at revision %d after one batch, want 1", e.Revision)
	}
}
