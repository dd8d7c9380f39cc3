package store_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/store"
)

// A Change from the entry the caller wrote applies to it without reading;
// one from an entry another writer has replaced since loses the race at
// the write, reads the record again and re-applies, so no update is lost.
func TestBucketChangeFromOwnWrite(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	b := mustBucket(t, st, store.BucketConfig{Name: "t_from"})
	ctx := testCtx(t)
	inc := func(c *counter) error { c.N++; return nil }
	own, err := b.Change(ctx, "k", store.Change[counter]{Upsert: true, Apply: inc})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		other   bool // another writer changes the record after own's write
		applies int
		want    int
	}{
		{name: "unchanged since", applies: 1, want: 2},
		{name: "changed since", other: true, applies: 2, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.other {
				if _, err := b.Update(ctx, "k", inc); err != nil {
					t.Fatal(err)
				}
			}
			applies := 0
			from := own
			next, err := b.Change(ctx, "k", store.Change[counter]{From: &from, Apply: func(c *counter) error {
				applies++
				return inc(c)
			}})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := b.Get(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			got := []int{applies, next.Value.N, stored.Value.N}
			if diff := cmp.Diff([]int{tt.applies, tt.want, tt.want}, got); diff != "" {
				t.Errorf("applies, returned, stored (-want +got):\n%s", diff)
			}
			if next.Revision != stored.Revision {
				t.Errorf("returned revision %d, stored %d", next.Revision, stored.Revision)
			}
			own = next
		})
	}
}
