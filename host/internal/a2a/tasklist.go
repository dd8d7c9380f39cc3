package a2a

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

// ListQuery filters and pages ListTasks.
type ListQuery struct {
	Owner            string    // only this owner's tasks (auth.Principal.Owner)
	ContextID        string    // "" = any
	Status           TaskState // "" or StateUnspecified: any
	Tenant           string    // "" = any
	After            *time.Time
	PageSize         int // 0 = DefaultPageSize; capped at MaxPageSize
	PageToken        string
	IncludeArtifacts bool
	HistoryLength    *int
}

// List returns the owner's matching tasks, newest update first, a page at a
// time. It reads the index keys of the owner's matching tasks (no values)
// and decodes only the records of the page, stopping early (with a
// NextPageToken) once MaxListBytes of records are decoded. NextPageToken is
// "" on the last page; TotalSize counts every match.
func (s *TaskStore) List(ctx context.Context, q ListQuery) (*a2av1.ListTasksResponse, error) {
	if q.PageSize < 0 || q.PageSize > MaxPageSize {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "pageSize must be between 1 and %d", MaxPageSize)
	}
	if q.PageSize == 0 {
		q.PageSize = DefaultPageSize
	}
	var cur *cursor
	if q.PageToken != "" {
		c, err := parseCursor(q.PageToken)
		if err != nil {
			return nil, err
		}
		cur = &c
	}
	entries, err := s.indexed(ctx, q)
	if err != nil {
		return nil, err
	}
	if entries, err = s.withLive(ctx, q, entries); err != nil {
		return nil, err
	}
	start := 0
	if cur != nil {
		start = sort.Search(len(entries), func(i int) bool { return !entries[i].newerThan(*cur) })
	}
	resp := &a2av1.ListTasksResponse{Tasks: []*a2av1.Task{}, TotalSize: len(entries), PageSize: q.PageSize}
	var used int64
	i := start
	for ; i < len(entries) && len(resp.Tasks) < q.PageSize; i++ {
		e := entries[i]
		if e.rec != nil { // a live task: its record came with the entry
			resp.Tasks = append(resp.Tasks, trimTask(e.rec.Task, q.IncludeArtifacts, q.HistoryLength))
			continue
		}
		raw, err := s.kv.GetRaw(ctx, string(e.id))
		if errors.Is(err, store.ErrNotFound) {
			s.dropIndex(ctx, e.key) // the task expired or was never stored
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("a2a: list tasks: %w", err)
		}
		if n := int64(len(raw.Data)); used+n > s.listBytes && len(resp.Tasks) > 0 {
			break
		}
		used += int64(len(raw.Data))
		s.decodedRecords.Add(1)
		s.decodedBytes.Add(int64(len(raw.Data)))
		rec, err := s.kv.Decode(raw.Data)
		if err != nil || rec.Task == nil || rec.Owner != q.Owner {
			continue
		}
		if at := rec.Updated.UnixNano(); at != e.updated {
			if at > e.updated {
				s.dropIndex(ctx, e.key) // a later key describes the task
			}
			continue
		}
		resp.Tasks = append(resp.Tasks, trimTask(rec.Task, q.IncludeArtifacts, q.HistoryLength))
	}
	if i < len(entries) && i > start {
		last := entries[i-1]
		resp.NextPageToken = cursor{at: last.updated, id: string(last.id)}.String()
	}
	// "The page size used for this response": the tasks on this page (0
	// when none match), as the A2A TCK reads it.
	resp.PageSize = len(resp.Tasks)
	return resp, nil
}

type cursor struct {
	at int64
	id string
}

func (c cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.at, 10) + "|" + c.id))
}

func parseCursor(tok string) (cursor, error) {
	bad := fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "invalid pageToken")
	if len(tok) > 512 {
		return cursor{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return cursor{}, bad
	}
	at, id, ok := strings.Cut(string(b), "|")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return cursor{}, bad
	}
	return cursor{at: n, id: id}, nil
}

// newerThan reports whether e sorts before (is newer than) the cursor's
// task, i.e. it was on an earlier page.
func (e indexEntry) newerThan(c cursor) bool {
	if e.updated != c.at {
		return e.updated > c.at
	}
	return string(e.id) >= c.id
}

// trimTask returns a copy of t without artifacts (unless asked) and with at
// most historyLength history messages (the newest).
func trimTask(t *a2av1.Task, artifacts bool, historyLength *int) *a2av1.Task {
	c := *t
	if !artifacts {
		c.Artifacts = nil
	}
	if historyLength != nil {
		n := max(*historyLength, 0)
		if len(c.History) > n {
			c.History = c.History[len(c.History)-n:]
		}
	}
	return &c
}
