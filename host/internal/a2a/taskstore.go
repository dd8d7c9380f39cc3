package a2a

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Task store defaults and caps.
const (
	TasksBucket          = "skillhost_a2a_tasks"
	DefaultTaskRetention = 7 * 24 * time.Hour
	DefaultTaskMaxBytes  = 4 << 20 // one stored task (with its artifacts)
	DefaultPageSize      = 50
	MaxPageSize          = 100
	MaxTaskIDLen         = 128
	maxListScan          = 100_000 // tasks examined by one ListTasks
	maxUpdateRetries     = 32
)

var validTaskID = regexp.MustCompile(`^[A-Za-z0-9_=-]+$`)

// TaskStoreConfig configures OpenTaskStore.
type TaskStoreConfig struct {
	// A2A is the a2a.* section: max_bucket (the whole bucket, applied to
	// an existing bucket at open), max_list_bytes (task bytes one List
	// decodes; at least one task is returned), max_tasks_per_key,
	// max_task_bytes_per_key (0: a quarter of the bucket) and reserve (0:
	// an eighth of it). Optional: the zero section is
	// config.Defaults().A2A.
	config.A2A
	Bucket      string        // default TasksBucket
	Retention   time.Duration // tasks expire this long after their last update; default 7 days
	MaxTaskSize int32         // bytes of one stored task; default 4 MiB, capped at the store's MaxRecordBytes
	Logger      *slog.Logger  // task event and index problems; default slog.Default()
	// Provenance signs every transition and artifact into the task's
	// provenance chain (metadata ExtProvenance), in the write that stores
	// the change. Optional. Default: nil, no provenance.
	Provenance *provenance.Signer
}

// Record is what the store keeps per task: the A2A task plus bookkeeping.
type Record struct {
	Task    *a2av1.Task `json:"task"`
	SkillID string      `json:"skillId,omitempty"`
	Plugin  string      `json:"plugin,omitempty"`
	Tenant  string      `json:"tenant,omitempty"`
	// Owner is the principal that created the task (auth.Principal.Owner):
	// only it gets, lists, cancels or subscribes to the task.
	Owner   string    `json:"owner,omitempty"`
	Updated time.Time `json:"updated"`
	// Quota is what this record holds in its owner's usage (taskquota.go).
	Quota store.Charge `json:"quota,omitzero"`

	note   note              // who caused the next transition and why (provenance.go); not stored
	signed []provenance.Link // the links the latest move appended, for its events (withLinks); not stored
}

// State is the record's task state.
func (r *Record) State() TaskState { return StateOf(r.Task.Status.State) }

// TaskStore persists tasks in a JetStream KV bucket. Every change is a
// revision-checked update, so concurrent writers (the execution and a
// CancelTask, possibly on another host) never lose a transition and a
// terminal task never changes.
type TaskStore struct {
	kv        jetstream.KeyValue
	idx       jetstream.KeyValue // the task index (taskindex.go)
	live      jetstream.KeyValue // running blocking tasks, in memory (live.go)
	nc        *nats.Conn
	max       int32
	listBytes int64
	log       *slog.Logger
	events    *events            // task events and cancels across hosts
	prov      *provenance.Signer // nil: no provenance
	usage     *store.Usage       // stored tasks per owner (taskquota.go)

	decodedRecords atomic.Int64 // records decoded by List, for tests and metrics
	decodedBytes   atomic.Int64
}

// OpenTaskStore creates or binds the tasks bucket and the task events stream
// on st.
func OpenTaskStore(ctx context.Context, st *store.Store, cfg TaskStoreConfig) (*TaskStore, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = TasksBucket
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultTaskRetention
	}
	if cfg.MaxTaskSize <= 0 {
		cfg.MaxTaskSize = DefaultTaskMaxBytes
	}
	if cfg.A2A == (config.A2A{}) {
		cfg.A2A = config.Defaults().A2A
	}
	kv, err := st.KeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: cfg.Bucket, Description: "skillhost A2A tasks", History: 1, TTL: cfg.Retention,
		MaxValueSize: cfg.MaxTaskSize, MaxBytes: int64(cfg.MaxBucket), Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("a2a: open task store: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ev, err := openEvents(ctx, st, cfg.Logger)
	if err != nil {
		return nil, err
	}
	idx, err := openIndex(ctx, st.KeyValue, cfg.Retention, int64(cfg.MaxBucket)/4)
	if err != nil {
		return nil, fmt.Errorf("a2a: open task index: %w", err)
	}
	// A record must also fit the NATS server's max_payload: beyond it the
	// write would fail with a NATS error instead of output_limit.
	maxRec := int32(min(int64(cfg.MaxTaskSize), st.MaxRecordBytes()))
	live, err := openLive(ctx, st.KeyValue, maxRec)
	if err != nil {
		return nil, fmt.Errorf("a2a: open live tasks: %w", err)
	}
	cfg.resolveQuotas(taskBound(maxRec))
	usage, err := openTaskUsage(ctx, st, cfg)
	if err != nil {
		return nil, fmt.Errorf("a2a: open task usage: %w", err)
	}
	return &TaskStore{kv: kv, idx: idx, live: live, nc: st.JetStream().Conn(), max: maxRec, listBytes: int64(cfg.MaxListBytes),
		log: cfg.Logger, events: ev, prov: cfg.Provenance, usage: usage}, nil
}

// Decoded reports how many records List has decoded and their bytes.
func (s *TaskStore) Decoded() (records, bytes int64) {
	return s.decodedRecords.Load(), s.decodedBytes.Load()
}

func checkTaskID(id a2av1.TaskID) error {
	if id == "" || len(id) > MaxTaskIDLen || !validTaskID.MatchString(string(id)) {
		return fault.New(fault.TaskNotFound, fault.ReasonTaskNotFound, fmt.Sprintf("task %q not found", truncate(string(id), 64)))
	}
	return nil
}

func notFound(id a2av1.TaskID) error {
	return fault.New(fault.TaskNotFound, fault.ReasonTaskNotFound, fmt.Sprintf("task %q not found", truncate(string(id), 64))).
		With("task_id", truncate(string(id), MaxTaskIDLen))
}

func (s *TaskStore) encode(rec *Record) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("a2a: encode task: %w", err)
	}
	if int64(len(b)) > int64(s.max) {
		return nil, fault.Newf(fault.ResourceExhausted, fault.ReasonOutputLimit, "task record is %d bytes, over the %d-byte task cap", len(b), s.max)
	}
	return b, nil
}

// Create stores a new task; its id must be unused. It is new work of
// rec.Owner, admitted first (see Admit).
func (s *TaskStore) Create(ctx context.Context, rec *Record) error {
	if err := checkTaskID(rec.Task.ID); err != nil {
		return err
	}
	rec.Updated = time.Now().UTC()
	p, err := s.Admit(ctx, rec)
	if err != nil {
		return err
	}
	b, err := s.encode(rec)
	if err == nil {
		err = s.putIndex(ctx, rec)
	}
	if err != nil {
		p.Drop(ctx)
		return err
	}
	_, err = s.kv.Create(ctx, string(rec.Task.ID), b)
	p.Finish(ctx, err)
	if err != nil {
		s.dropIndex(ctx, indexKey(rec))
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fault.Newf(fault.InvalidState, fault.ReasonTaskExists, "task %q already exists", rec.Task.ID)
		}
		return storeFault(err, "create task")
	}
	return nil
}

// Get returns the task's record; TaskNotFound (-32001) when absent.
func (s *TaskStore) Get(ctx context.Context, id a2av1.TaskID) (*Record, error) {
	rec, _, err := s.get(ctx, id)
	return rec, err
}

func (s *TaskStore) get(ctx context.Context, id a2av1.TaskID) (*Record, uint64, error) {
	if err := checkTaskID(id); err != nil {
		return nil, 0, err
	}
	e, err := s.kv.Get(ctx, string(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, notFound(id)
	}
	if err != nil {
		return nil, 0, storeFault(err, "get task")
	}
	var rec Record
	if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.Task == nil {
		return nil, 0, fmt.Errorf("a2a: decode task %s: %w", id, err)
	}
	return &rec, e.Revision(), nil
}

// Update applies fn to the current record and stores the result only if
// nobody changed it meanwhile (re-reading and re-applying on a conflict).
// fn returns an error to abort (e.g. a refused transition). A terminal task
// is never changed: fn is not called and the transition error is returned.
func (s *TaskStore) Update(ctx context.Context, id a2av1.TaskID, next TaskState, fn func(*Record) error) (*Record, error) {
	for range maxUpdateRetries {
		rec, rev, err := s.get(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := rec.State().CanTransition(next); err != nil {
			return rec, err
		}
		from, known := rec.State(), len(rec.Task.Artifacts)
		if err := fn(rec); err != nil {
			return rec, err
		}
		oldKey := indexKey(rec)
		now := time.Now().UTC()
		rec.Updated = now
		rec.Task.Status.State = next.Wire()
		rec.Task.Status.Timestamp = &now
		if err := s.signMove(rec, from, known); err != nil {
			return rec, err
		}
		b, p, err := s.charged(ctx, rec, next)
		if err != nil {
			return rec, err
		}
		if err := s.putIndex(ctx, rec); err != nil {
			p.Drop(ctx)
			return nil, err
		}
		_, err = s.kv.Update(ctx, string(id), b, rev)
		p.Finish(ctx, err)
		if err != nil {
			s.dropIndex(ctx, indexKey(rec))
		}
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return nil, storeFault(err, "update task")
		}
		s.dropIndex(ctx, oldKey)
		return rec, nil
	}
	return nil, fault.Newf(fault.InvalidState, fault.ReasonTaskContended, "task %s changed %d times during one update", id, maxUpdateRetries)
}

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
		raw, err := s.kv.Get(ctx, string(e.id))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			s.dropIndex(ctx, e.key) // the task expired or was never stored
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("a2a: list tasks: %w", err)
		}
		if n := int64(len(raw.Value())); used+n > s.listBytes && len(resp.Tasks) > 0 {
			break
		}
		used += int64(len(raw.Value()))
		s.decodedRecords.Add(1)
		s.decodedBytes.Add(int64(len(raw.Value())))
		var rec Record
		if err := json.Unmarshal(raw.Value(), &rec); err != nil || rec.Task == nil || rec.Owner != q.Owner {
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
