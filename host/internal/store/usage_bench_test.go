package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/internal/store"
)

// BenchmarkUsageOneOwner is what the ledger costs a key whose clients send
// tasks at once (P3): 32 goroutines admit a record of one owner, charge its
// final write and finish it, as a blocking SendMessage does.
func BenchmarkUsageOneOwner(b *testing.B) {
	st, err := store.Open(b.Context(), store.Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if _, err := st.KeyValue(b.Context(), jetstream.KeyValueConfig{Bucket: accounted, History: 1, TTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	u, err := st.OpenUsage(b.Context(), store.UsageConfig{Name: "records", Bucket: accounted, MaxCount: 1 << 30, MaxBytes: 1 << 50,
		CountLimit: "test.max_per_key", BytesLimit: "test.max_bytes_per_key", ReserveLimit: "test.reserve"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range work {
				p, err := u.Admit(ctx, "key:alice", true, store.Charge{}, 4096)
				if err != nil {
					b.Error(err)
					return
				}
				f := u.Charge(ctx, "key:alice", p.Charge(), 600, store.Final)
				f.Finish(ctx, nil)
			}
		})
	}
	b.ResetTimer()
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
}
