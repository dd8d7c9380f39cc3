package a2a

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/store"
)

// The task index makes ListTasks cost what one owner's matching tasks
// cost, not what the whole store holds. Every task has one key in the index
// bucket, and the key alone says everything ListTasks filters and sorts on:
//
//	<owner>.<tenant>.<context>.<state>.<updated>.<task id>
//
// owner, tenant and context are 128-bit hex hashes ("-" for an empty
// tenant), state the v0.3 state name, updated the last update in Unix
// nanoseconds (20 digits). ListTasks lists the keys matching the caller's
// owner (and, as subject wildcards the server applies, the tenant, context
// and state filters) without reading any value, sorts them, and reads only
// the records of the page it returns. A write adds the task's new key before
// the record changes and deletes the old key after; a crash in between
// leaves a stale key, which List recognises (the record's update time
// differs) and removes.

// IndexBucket is the KV bucket of the task index.
const IndexBucket = "skillhost_a2a_task_index"

const (
	indexHashHex   = 32  // hex digits of a hashed key token
	indexMaxValue  = 64  // index values are empty
	indexAnyTenant = "-" // the token of an empty tenant
)

// indexEntry is one parsed index key.
type indexEntry struct {
	key     string
	state   string
	updated int64
	id      a2av1.TaskID
	rec     *Record // set for a live task (live.go)
}

func hashToken(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:indexHashHex]
}

func tenantToken(tenant string) string {
	if tenant == "" {
		return indexAnyTenant
	}
	return hashToken("tenant:" + tenant)
}

// indexKey is the index key of rec as it is now.
func indexKey(rec *Record) string {
	return strings.Join([]string{
		hashToken("owner:" + rec.Owner), tenantToken(rec.Tenant), hashToken("context:" + rec.Task.ContextID),
		rec.State().V03(), fmt.Sprintf("%020d", rec.Updated.UnixNano()), string(rec.Task.ID),
	}, ".")
}

// indexFilter is the subject filter of a query: the owner always, the
// other tokens when the query names them.
func indexFilter(q ListQuery) string {
	tenant, ctx, state := "*", "*", "*"
	if q.Tenant != "" {
		tenant = tenantToken(q.Tenant)
	}
	if q.ContextID != "" {
		ctx = hashToken("context:" + q.ContextID)
	}
	if q.Status != "" && q.Status != StateUnspecified {
		state = q.Status.V03()
	}
	return strings.Join([]string{hashToken("owner:" + q.Owner), tenant, ctx, state, "*", "*"}, ".")
}

func parseIndexKey(key string) (indexEntry, bool) {
	parts := strings.Split(key, ".")
	if len(parts) != 6 {
		return indexEntry{}, false
	}
	at, err := strconv.ParseInt(parts[4], 10, 64)
	if err != nil || checkTaskID(a2av1.TaskID(parts[5])) != nil {
		return indexEntry{}, false
	}
	return indexEntry{key: key, state: parts[3], updated: at, id: a2av1.TaskID(parts[5])}, true
}

// openIndex creates or binds the index bucket.
func openIndex(ctx context.Context, st *store.Store, retention time.Duration, maxBytes int64) (*store.Bucket[struct{}], error) {
	return store.OpenBucket[struct{}](ctx, st, store.BucketConfig{
		Name: IndexBucket, Description: "skillhost A2A task index (owner, tenant, context, state, update time)",
		TTL: retention, MaxValueBytes: indexMaxValue, MaxBytes: maxBytes, What: "a2a task index key",
	})
}

// indexed lists the index entries matching q, newest first, after q.After.
// It reads keys only (no values) and at most maxListScan of them.
func (s *TaskStore) indexed(ctx context.Context, q ListQuery) ([]indexEntry, error) {
	var out []indexEntry
	for key, err := range s.idx.Keys(ctx, indexFilter(q)) {
		if err != nil {
			return nil, fmt.Errorf("a2a: list task index: %w", err)
		}
		e, ok := parseIndexKey(key)
		if !ok || (q.After != nil && e.updated <= q.After.UnixNano()) {
			continue
		}
		if out = append(out, e); len(out) >= maxListScan {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sortEntries(out)
	return out, nil
}

// withLive adds q's live tasks to the stored ones (a task both live and
// stored, ending just now, is listed once, stored), newest first.
func (s *TaskStore) withLive(ctx context.Context, q ListQuery, stored []indexEntry) ([]indexEntry, error) {
	live, err := s.liveEntries(ctx, q)
	if err != nil || len(live) == 0 {
		return stored, err
	}
	have := make(map[a2av1.TaskID]bool, len(stored))
	for _, e := range stored {
		have[e.id] = true
	}
	for _, e := range live {
		if !have[e.id] {
			stored = append(stored, e)
		}
	}
	sortEntries(stored)
	return stored, nil
}

// sortEntries orders entries newest update first (then by id).
func sortEntries(out []indexEntry) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].updated != out[j].updated {
			return out[i].updated > out[j].updated
		}
		return out[i].id > out[j].id
	})
}

// putIndex adds rec's current key.
func (s *TaskStore) putIndex(ctx context.Context, rec *Record) error {
	_, err := s.idx.PutRaw(ctx, indexKey(rec), nil)
	return err
}

// dropIndex removes an index key that no longer describes its task (a
// failure only leaves it for List to recognise as stale).
func (s *TaskStore) dropIndex(ctx context.Context, key string) {
	if err := s.idx.Purge(ctx, key); err != nil {
		s.log.Debug("a2a: stale task index key not removed", "key", key, "err", err)
	}
}
