package a2a_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
)

func ownedRecord(id, owner, contextID string, metaBytes int) *a2a.Record {
	rec := newRecord(id)
	rec.Owner, rec.Task.ContextID = owner, contextID
	if metaBytes > 0 {
		rec.Task.Metadata = map[string]any{"blob": strings.Repeat("m", metaBytes)}
	}
	return rec
}

// listAll pages through q and returns the task ids in order.
func listAll(t *testing.T, ts *a2a.TaskStore, q a2a.ListQuery) (ids []string, pages int) {
	t.Helper()
	for {
		resp, err := ts.List(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, task := range resp.Tasks {
			ids = append(ids, string(task.ID))
		}
		if resp.NextPageToken == "" || pages > 100 {
			return ids, pages
		}
		q.PageToken = resp.NextPageToken
	}
}

// Finding 4: ListTasks decoded every stored task on every call (150 tasks of
// 1 MiB metadata: 18 s, RSS +2.9 GiB) and listed every client's tasks. Now
// one owner's listing reads only that owner's index keys and decodes only
// the records of the page, at most MaxListBytes of them.
func TestListTasksIsIndexedAndBounded(t *testing.T) {
	t.Parallel()
	const (
		big       = 16
		blob      = 1 << 20
		listBytes = 3 << 20
	)
	ctx := context.Background()
	ts := mustTaskStore(t, a2a.TaskStoreConfig{A2A: a2aSection(func(c *config.A2A) { c.MaxListBytes = listBytes })})
	for i := range big {
		if err := ts.Create(ctx, ownedRecord(fmt.Sprintf("big-%02d", i), "key:a", "ctx-a", blob)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if err := ts.Create(ctx, ownedRecord(fmt.Sprintf("small-%d", i), "key:b", fmt.Sprintf("ctx-b%d", i%2), 0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.Update(ctx, "small-0", a2a.StateWorking, func(*a2a.Record) error { return nil }); err != nil {
		t.Fatal(err)
	}

	// Owner b: 16 MiB of a's tasks are never read.
	r0, b0 := ts.Decoded()
	resp, err := ts.List(ctx, a2a.ListQuery{Owner: "key:b"})
	if err != nil {
		t.Fatal(err)
	}
	r1, b1 := ts.Decoded()
	var got []string
	for _, task := range resp.Tasks {
		got = append(got, string(task.ID))
	}
	if diff := cmp.Diff([]string{"small-0", "small-4", "small-3", "small-2", "small-1"}, got); diff != "" {
		t.Errorf("b's tasks, newest update first (-want +got):\n%s", diff)
	}
	if resp.TotalSize != 5 || resp.NextPageToken != "" {
		t.Errorf("totalSize %d, nextPageToken %q; want 5 and none", resp.TotalSize, resp.NextPageToken)
	}
	if r1-r0 != 5 || b1-b0 > 64<<10 {
		t.Errorf("listing b decoded %d records, %d bytes; want 5 small records", r1-r0, b1-b0)
	}

	// Owner a: each page stops at MaxListBytes; paging returns every task
	// exactly once.
	ids, pages := listAll(t, ts, a2a.ListQuery{Owner: "key:a", PageSize: a2a.MaxPageSize})
	r2, b2 := ts.Decoded()
	if len(ids) != big || pages < big/3 {
		t.Errorf("a: %d tasks in %d pages, want %d tasks in at least %d pages", len(ids), pages, big, big/3)
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != big {
		t.Errorf("a task was listed twice: %v", ids)
	}
	if perPage := (b2 - b1) / int64(pages); perPage > listBytes+blob {
		t.Errorf("decoded %d bytes per page, over the %d-byte bound", perPage, listBytes)
	}
	if r2-r1 != big {
		t.Errorf("paging a decoded %d records, want each of the %d once", r2-r1, big)
	}

	// Filters are applied to the index: no record outside them is read.
	for _, tt := range []struct {
		name string
		q    a2a.ListQuery
		want []string
	}{
		{"context", a2a.ListQuery{Owner: "key:b", ContextID: "ctx-b1"}, []string{"small-3", "small-1"}},
		{"status", a2a.ListQuery{Owner: "key:b", Status: a2a.StateWorking}, []string{"small-0"}},
		{"other owner's context", a2a.ListQuery{Owner: "key:b", ContextID: "ctx-a"}, nil},
		{"unknown owner", a2a.ListQuery{Owner: "key:c"}, nil},
	} {
		before, _ := ts.Decoded()
		got, _ := listAll(t, ts, tt.q)
		after, _ := ts.Decoded()
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if after-before != int64(len(tt.want)) {
			t.Errorf("%s: decoded %d records for %d results", tt.name, after-before, len(tt.want))
		}
	}
	if _, err := ts.Get(ctx, a2av1.TaskID("small-0")); err != nil {
		t.Fatal(err)
	}
}
