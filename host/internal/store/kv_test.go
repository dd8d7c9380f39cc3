package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

type counter struct {
	N     int    `json:"n"`
	Owner string `json:"owner,omitempty"`
}

func mustBucket(t *testing.T, st *store.Store, cfg store.BucketConfig) *store.Bucket[counter] {
	t.Helper()
	b, err := store.OpenBucket[counter](testCtx(t), st, cfg)
	if err != nil {
		t.Fatalf("OpenBucket: %v", err)
	}
	return b
}

// Concurrent read-modify-writes of one record never lose an update: the
// CAS loop re-reads and re-applies on every conflict.
func TestBucketChangeLosesNoConcurrentUpdate(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	b := mustBucket(t, st, store.BucketConfig{Name: "t_counter", Retries: 1000})
	ctx := testCtx(t)
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for range writers {
		wg.Go(func() {
			for range each {
				_, err := b.Change(ctx, "k", store.Change[counter]{Upsert: true, Apply: func(c *counter) error {
					c.N++
					return nil
				}})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Change: %v", err)
		}
	}
	e, err := b.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if e.Value.N != writers*each {
		t.Errorf("counter = %d after %d increments", e.Value.N, writers*each)
	}
}

// The sentinels and the ends of a change other than a write.
func TestBucketErrorsAndChangeEnds(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	b := mustBucket(t, st, store.BucketConfig{Name: "t_ends"})
	ctx := testCtx(t)

	if _, err := b.Get(ctx, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := b.Update(ctx, "none", func(*counter) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update of a missing key: %v, want ErrNotFound", err)
	}
	rev, err := b.Create(ctx, "a", &counter{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "a", &counter{N: 2}); !errors.Is(err, store.ErrExists) {
		t.Errorf("second Create: %v, want ErrExists", err)
	}
	if _, err := b.Replace(ctx, "a", &counter{N: 3}, rev); err != nil {
		t.Fatalf("Replace at the current revision: %v", err)
	}
	if _, err := b.Replace(ctx, "a", &counter{N: 4}, rev); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Replace at a stale revision: %v, want ErrConflict", err)
	}
	if err := b.Delete(ctx, "a", rev); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Delete at a stale revision: %v, want ErrConflict", err)
	}

	// Unchanged writes nothing and returns what Apply saw.
	e, err := b.Change(ctx, "a", store.Change[counter]{Apply: func(c *counter) error { c.N = 99; return store.ErrUnchanged }})
	if err != nil || e.Value.N != 99 {
		t.Errorf("Unchanged: %+v, %v", e.Value, err)
	}
	if got, _ := b.Get(ctx, "a"); got.Value.N != 3 {
		t.Errorf("after Unchanged the record is %d, want 3", got.Value.N)
	}
	// Apply's error aborts with the value it saw.
	boom := errors.New("boom")
	if v, err := b.Update(ctx, "a", func(*counter) error { return boom }); !errors.Is(err, boom) || v == nil || v.N != 3 {
		t.Errorf("aborted Update: %+v, %v", v, err)
	}
	// Remove deletes.
	if _, err := b.Change(ctx, "a", store.Change[counter]{Apply: func(*counter) error { return store.ErrRemove }}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after Remove: %v, want ErrNotFound", err)
	}

	// An undecodable record is reported with its revision, and an Upsert
	// that replaces undecodable records overwrites it.
	if _, err := b.PutRaw(ctx, "bad", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	bad, err := b.Get(ctx, "bad")
	if !errors.Is(err, store.ErrUndecodable) || bad.Revision == 0 {
		t.Errorf("Get of an undecodable record: rev %d, %v", bad.Revision, err)
	}
	if _, err := b.Update(ctx, "bad", func(*counter) error { return nil }); !errors.Is(err, store.ErrUndecodable) {
		t.Errorf("Update of an undecodable record: %v, want ErrUndecodable", err)
	}
	e, err = b.Change(ctx, "bad", store.Change[counter]{Upsert: true, ReplaceUndecodable: true, Apply: func(c *counter) error { c.N = 7; return nil }})
	if err != nil || e.Revision <= bad.Revision {
		t.Fatalf("Upsert over an undecodable record: rev %d, %v", e.Revision, err)
	}
	if got, err := b.Get(ctx, "bad"); err != nil || got.Value.N != 7 {
		t.Errorf("after the Upsert: %+v, %v", got.Value, err)
	}
}

// A change that loses every race ends with the bucket's Contended error
// after Retries attempts, each told its outcome.
func TestBucketChangeGivesUpWithContended(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	contended := fault.New(fault.InvalidState, fault.ReasonTaskContended, "contended")
	b := mustBucket(t, st, store.BucketConfig{Name: "t_contended", Retries: 3,
		Contended: func(key string) error { return contended.With("key", key) }})
	ctx := testCtx(t)
	if _, err := b.Create(ctx, "k", &counter{}); err != nil {
		t.Fatal(err)
	}
	var outcomes []bool // conflict per attempt
	_, err := b.Change(ctx, "k", store.Change[counter]{
		Apply: func(c *counter) error { c.N++; return nil },
		Write: func(ctx context.Context, c *counter) ([]byte, func(error), error) {
			// Another writer lands between this attempt's read and write.
			if _, err := b.Put(ctx, "k", &counter{N: 1000}); err != nil {
				return nil, nil, err
			}
			data, err := b.Encode(c)
			return data, func(err error) { outcomes = append(outcomes, errors.Is(err, store.ErrConflict)) }, err
		},
	})
	if !errors.Is(err, contended) {
		t.Fatalf("Change: %v, want the Contended error", err)
	}
	if diff := cmp.Diff([]bool{true, true, true}, outcomes); diff != "" {
		t.Errorf("attempts' outcomes (-want +got):\n%s", diff)
	}
}

// A full bucket is storage_full, whichever write meets it, and the write
// is Refused (it did not land).
func TestBucketFullIsStorageFull(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	b := mustBucket(t, st, store.BucketConfig{Name: "t_full", MaxBytes: 4 << 10, What: "test record"})
	ctx := testCtx(t)
	big := strings.Repeat("x", 900)
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = b.Create(ctx, "k"+strings.Repeat("i", i+1), &counter{Owner: big})
	}
	if diff := cmp.Diff(faultInfo{Kind: fault.ResourceExhausted, Reason: fault.ReasonStorageFull}, faultOf(t, err)); diff != "" {
		t.Errorf("write into a full bucket (-want +got):\n%s", diff)
	}
	if !store.Refused(err) {
		t.Errorf("Refused(%v) = false", err)
	}
}

// Keys lists by filter without values, and stops when the loop does.
func TestBucketKeys(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	b := mustBucket(t, st, store.BucketConfig{Name: "t_keys"})
	ctx := testCtx(t)
	for _, k := range []string{"a.1", "a.2", "b.1"} {
		if _, err := b.Create(ctx, k, &counter{}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for k, err := range b.Keys(ctx, "a.*") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	if diff := cmp.Diff([]string{"a.1", "a.2"}, got); diff != "" {
		t.Errorf("Keys(a.*) (-want +got):\n%s", diff)
	}
	n := 0
	for range b.Keys(ctx, "") {
		if n++; n == 1 {
			break
		}
	}
	for k, err := range b.Keys(ctx, "none.*") {
		t.Errorf("Keys of no match yielded %q, %v", k, err)
	}
}

// A key watch reports the current keys, a nil marker, then writes and
// deletes as they happen.
func TestBucketWatchKeys(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	b := mustBucket(t, st, store.BucketConfig{Name: "t_watch"})
	ctx := testCtx(t)
	if _, err := b.Create(ctx, "old", &counter{}); err != nil {
		t.Fatal(err)
	}
	w, err := b.WatchKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() *store.KeyEvent {
		t.Helper()
		select {
		case e, ok := <-w.Updates():
			if !ok {
				t.Fatal("watch ended")
			}
			return e
		case <-ctx.Done():
			t.Fatal("no watch event")
		}
		return nil
	}
	if e := next(); e == nil || e.Key != "old" || e.Deleted {
		t.Fatalf("first event %+v, want old", e)
	}
	if e := next(); e != nil {
		t.Fatalf("second event %+v, want the nil marker", e)
	}
	rev, err := b.Create(ctx, "new", &counter{})
	if err != nil {
		t.Fatal(err)
	}
	if e := next(); e == nil || e.Key != "new" || e.Revision != rev || e.Deleted {
		t.Fatalf("event %+v, want new at %d", e, rev)
	}
	if err := b.Delete(ctx, "new", rev); err != nil {
		t.Fatal(err)
	}
	if e := next(); e == nil || e.Key != "new" || !e.Deleted {
		t.Fatalf("event %+v, want the delete of new", e)
	}
	w.Stop()
	w.Stop() // idempotent
}
