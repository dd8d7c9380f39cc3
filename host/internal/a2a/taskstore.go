package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync/atomic"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

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
	// max_task_bytes_per_key (0: a quarter of the bucket), reserve (0:
	// an eighth of it) and lease_ttl (how long a host may stay silent
	// before the tasks it runs are taken from it; lease.go). Optional: the
	// zero section is config.Defaults().A2A.
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
	// Lease is the host boot running the task (lease.go); kept after.
	Lease *Lease `json:"lease,omitempty"`

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
	kv        *store.Bucket[Record]
	idx       *store.Bucket[struct{}] // the task index (taskindex.go)
	live      *store.Bucket[Record]   // running blocking tasks, in memory (live.go)
	max       int32
	listBytes int64
	log       *slog.Logger
	events    *events            // task events and cancels across hosts
	prov      *provenance.Signer // nil: no provenance
	usage     *store.Usage       // stored tasks per owner (taskquota.go)
	held      *store.Leases      // the tasks each boot runs (lease.go); nil with an embedded store

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
	kv, err := store.OpenBucket[Record](ctx, st, store.BucketConfig{
		Name: cfg.Bucket, Description: "skillhost A2A tasks", TTL: cfg.Retention,
		MaxValueBytes: cfg.MaxTaskSize, MaxBytes: int64(cfg.MaxBucket), What: "a2a task", Retries: maxUpdateRetries,
		Contended: func(id string) error {
			return fault.Newf(fault.InvalidState, fault.ReasonTaskContended, "task %s changed %d times during one update", id, maxUpdateRetries)
		},
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
	idx, err := openIndex(ctx, st, cfg.Retention, int64(cfg.MaxBucket)/4)
	if err != nil {
		return nil, fmt.Errorf("a2a: open task index: %w", err)
	}
	// A record must also fit the NATS server's max_payload: beyond it the
	// write would fail with a NATS error instead of output_limit.
	maxRec := int32(min(int64(cfg.MaxTaskSize), st.MaxRecordBytes()))
	live, err := openLive(ctx, st, maxRec)
	if err != nil {
		return nil, fmt.Errorf("a2a: open live tasks: %w", err)
	}
	cfg.resolveQuotas(taskBound(maxRec))
	usage, err := openTaskUsage(ctx, st, cfg)
	if err != nil {
		return nil, fmt.Errorf("a2a: open task usage: %w", err)
	}
	held, err := openLeases(ctx, st, cfg.LeaseTTL)
	if err != nil {
		return nil, err
	}
	return &TaskStore{kv: kv, idx: idx, live: live, max: maxRec, listBytes: int64(cfg.MaxListBytes),
		log: cfg.Logger, events: ev, prov: cfg.Provenance, usage: usage, held: held}, nil
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
	_, err = s.kv.CreateRaw(ctx, string(rec.Task.ID), b)
	p.Finish(ctx, err)
	if err != nil {
		s.dropIndex(ctx, indexKey(rec))
		if errors.Is(err, store.ErrExists) {
			return fault.Newf(fault.InvalidState, fault.ReasonTaskExists, "task %q already exists", rec.Task.ID)
		}
		return err
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
	if err == nil {
		err = decoded(e.Value)
	}
	if err != nil {
		return nil, 0, taskErr(id, err)
	}
	return e.Value, e.Revision, nil
}

// decoded refuses a record without a task.
func decoded(rec *Record) error {
	if rec.Task == nil {
		return fmt.Errorf("%w: no task", store.ErrUndecodable)
	}
	return nil
}

// taskErr is what a read of task id that failed with err returns.
func taskErr(id a2av1.TaskID, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound(id)
	case errors.Is(err, store.ErrUndecodable):
		return fmt.Errorf("a2a: decode task %s: %w", id, err)
	}
	return err
}

// Update applies fn to the current record and stores the result only if
// nobody changed it meanwhile (re-reading and re-applying on a conflict).
// fn returns an error to abort (e.g. a refused transition). A terminal task
// is never changed: fn is not called and the transition error is returned.
// Each write adds the task's new index key first and drops the old one
// once the record is stored (taskindex.go).
func (s *TaskStore) Update(ctx context.Context, id a2av1.TaskID, next TaskState, fn func(*Record) error) (*Record, error) {
	if err := checkTaskID(id); err != nil {
		return nil, err
	}
	var oldKey string
	e, err := s.kv.Change(ctx, string(id), store.Change[Record]{
		Apply: func(rec *Record) error {
			if err := decoded(rec); err != nil {
				return err
			}
			if err := rec.State().CanTransition(next); err != nil {
				return err
			}
			from, known := rec.State(), len(rec.Task.Artifacts)
			if err := fn(rec); err != nil {
				return err
			}
			oldKey = indexKey(rec)
			now := time.Now().UTC()
			rec.Updated = now
			rec.Task.Status.State = next.Wire()
			rec.Task.Status.Timestamp = &now
			return s.signMove(rec, from, known)
		},
		Write: func(ctx context.Context, rec *Record) ([]byte, func(error), error) {
			b, p, err := s.charged(ctx, rec, next)
			if err != nil {
				return nil, nil, err
			}
			if err := s.putIndex(ctx, rec); err != nil {
				p.Drop(ctx)
				return nil, nil, err
			}
			return b, func(err error) {
				p.Finish(ctx, err)
				if err != nil {
					s.dropIndex(ctx, indexKey(rec))
				}
			}, nil
		},
	})
	if err != nil {
		return e.Value, taskErr(id, err)
	}
	s.dropIndex(ctx, oldKey)
	return e.Value, nil
}
