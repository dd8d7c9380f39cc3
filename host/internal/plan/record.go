package plan

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Plan statuses.
const (
	StatusCreated   = "created"
	StatusExecuting = "executing"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

const (
	maxUpdateRetries      = 32
	executionIDPrefix     = "exec_"
	generatedPlanIDPrefix = "plan_"
)

// Step statuses, as plan/status reports them.
const (
	StepPending   = "pending"   // waiting for its dependencies
	StepQueued    = "queued"    // ready; its job is on the work queue
	StepRunning   = "running"   // running (or interrupted by a crash, about to run again)
	StepRetrying  = "retrying"  // failed retryably; waiting for its next attempt
	StepCompleted = "completed" // done; its output is checkpointed
	StepFailed    = "failed"    // failed for good; the plan failed with it
	StepCancelled = "cancelled" // was queued, running or retrying when the plan ended
)

// Record is what the plans bucket keeps per plan.
type Record struct {
	PlanID    string `json:"plan_id"`
	SessionID string `json:"session_id"`
	// Owner is the owner of the plan's session (auth.Principal.Owner); its
	// steps run as that principal.
	Owner       string          `json:"owner,omitempty"`
	Definition  Definition      `json:"definition"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Status      string          `json:"status"`
	ExecutionID string          `json:"execution_id,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	StartedAt   *time.Time      `json:"started_at,omitempty"`
	FinishedAt  *time.Time      `json:"finished_at,omitempty"`
	// Deadline ends the whole execution (execution_options.timeout).
	Deadline *time.Time `json:"deadline,omitempty"`
	// Parallel runs every ready step at once (execution_options.parallel).
	Parallel bool `json:"parallel,omitempty"`
	// Input is plan/execute's input, read by ${plan.input…} references.
	Input json.RawMessage `json:"input,omitempty"`
	// Webhook receives the final status (execution_options.webhook).
	Webhook    *Webhook   `json:"webhook,omitempty"`
	Checkpoint Checkpoint `json:"checkpoint"`
	Error      *StepError `json:"error,omitempty"`
	// Provenance is the plan's signed chain (package provenance): every
	// plan and step transition, step output and peer result; kept as the
	// JSON it was stored as, so a verifier reads exactly that.
	Provenance json.RawMessage `json:"provenance,omitempty"`
	// Quota is what this record holds in its owner's usage (quota.go).
	Quota store.Charge `json:"quota,omitzero"`
}

// Checkpoint is the progress of the current execution, one state per step
// in definition order.
type Checkpoint struct {
	Steps []StepState `json:"steps"`
}

// StepState is one step's part of the checkpoint.
type StepState struct {
	Status   string `json:"status"`
	Attempts int    `json:"attempts"` // how often the step started
	// Output is the step's output once completed.
	Output json.RawMessage `json:"output,omitempty"`
	// Job is the stream sequence of the job message that runs the step, so
	// a redelivery of that job (after a crash) runs it again while any other
	// copy of the job is dropped.
	Job        uint64     `json:"job,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`  // the latest attempt's start
	FinishedAt *time.Time `json:"finished_at,omitempty"` // completed or failed
	Error      *StepError `json:"error,omitempty"`       // the latest failure
	// Peer is the signed result of the remote peer an agent step delegated
	// to (StepOutcome.Peer), recorded in the plan's provenance.
	Peer *provenance.PeerResult `json:"peer,omitempty"`
	// Runs are the step's starts not known to have ended, by host boot, and
	// those whose host died while they ran (quarantine.go).
	Runs store.Runs `json:"runs,omitzero"`
}

// Completed is the number of completed steps.
func (c Checkpoint) Completed() int {
	n := 0
	for _, s := range c.Steps {
		if s.Status == StepCompleted {
			n++
		}
	}
	return n
}

// fresh is the checkpoint of a new execution of n steps.
func freshCheckpoint(n int) Checkpoint {
	c := Checkpoint{Steps: make([]StepState, n)}
	for i := range c.Steps {
		c.Steps[i].Status = StepPending
	}
	return c
}

// StepError is why a step, or an execution, failed, as plan/status reports it.
type StepError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// records is the plans bucket.
type records struct {
	kv    *store.Bucket[Record]
	max   int
	prov  *provenance.Signer // nil: no provenance
	usage *store.Usage       // stored plans per owner (quota.go)
}

// key is the bucket key of a plan: plans are namespaced by session, so two
// sessions may use the same plan id and neither learns of the other's.
func key(sessionID, planID string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(sessionID)) + "." + enc.EncodeToString([]byte(planID))
}

// parseKey splits a bucket key into its session and plan ids.
func parseKey(k string) (sessionID, planID string, ok bool) {
	enc := base64.RawURLEncoding
	s, p, found := strings.Cut(k, ".")
	sb, serr := enc.DecodeString(s)
	pb, perr := enc.DecodeString(p)
	return string(sb), string(pb), found && serr == nil && perr == nil
}

func notFound(planID string) *fault.Error {
	return fault.New(fault.PlanNotFound, fault.ReasonPlanNotFound, fmt.Sprintf("plan %q not found in this session", clip(planID, 64))).
		With("plan_id", clip(planID, MaxPlanIDBytes))
}

func (r *records) encode(rec *Record) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("plan: encode record: %w", err)
	}
	if len(b) > r.max {
		return nil, r.tooLarge(len(b))
	}
	return b, nil
}

// tooLarge is the error for a record of n bytes.
func (r *records) tooLarge(n int) *fault.Error {
	return fault.Newf(fault.ResourceExhausted, fault.ReasonOutputLimit,
		"plan record would be at least %d bytes, over the %d-byte limit (step outputs are kept in the plan's checkpoint)", n, r.max)
}

// create stores a new plan, new work of its owner admitted first (quota.go).
func (r *records) create(ctx context.Context, rec *Record) error {
	if err := r.seal(shape{}, rec); err != nil {
		return err
	}
	k := key(rec.SessionID, rec.PlanID)
	b, err := r.encode(rec)
	if err != nil {
		return err
	}
	p, err := r.admit(ctx, rec, recordSize(k, b))
	if err != nil {
		return err
	}
	if b, err = r.encode(rec); err != nil {
		p.Drop(ctx)
		return err
	}
	_, err = r.kv.CreateRaw(ctx, k, b)
	p.Finish(ctx, err)
	if errors.Is(err, store.ErrExists) {
		return fault.Newf(fault.InvalidState, fault.ReasonPlanExists, "plan %q already exists in this session", clip(rec.PlanID, 64)).
			With("plan_id", rec.PlanID)
	}
	return err
}

// get returns the plan and its revision; PlanNotFound when absent.
func (r *records) get(ctx context.Context, sessionID, planID string) (*Record, uint64, error) {
	e, err := r.kv.Get(ctx, key(sessionID, planID))
	if err != nil {
		return nil, 0, planErr(planID, err)
	}
	return e.Value, e.Revision, nil
}

// planErr is what a read of plan planID that failed with err returns.
func planErr(planID string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound(planID)
	case errors.Is(err, store.ErrUndecodable):
		return fmt.Errorf("plan: decode record %s: %w", planID, err)
	}
	return err
}

// contended is the error of an update that lost every race for the plan
// under key k.
func contended(k string) error {
	_, planID, _ := parseKey(k)
	return fault.Newf(fault.InvalidState, fault.ReasonPlanContended, "plan %q changed %d times during one update", clip(planID, 64), maxUpdateRetries)
}

// errUnchanged, returned by an update function, ends update without writing.
var errUnchanged = store.ErrUnchanged

// update applies fn to the current record and writes the result only if the
// record did not change meanwhile (revision check), re-reading and
// re-applying fn on a conflict. fn returning errUnchanged ends the update
// without a write (update then returns the record read and nil); any other
// error aborts. A write that starts an execution is new work of the plan's
// owner, admitted like a new plan (quota.go).
func (r *records) update(ctx context.Context, sessionID, planID string, fn func(*Record) error) (*Record, error) {
	rec, _, err := r.updateFrom(ctx, sessionID, planID, nil, 0, fn)
	return rec, err
}

// updateFrom is update starting from the record this host last wrote (from,
// at revision rev; fn changes it in place) instead of reading it again,
// unless it changed since; it returns the revision written too. A nil from
// reads.
func (r *records) updateFrom(ctx context.Context, sessionID, planID string, from *Record, rev uint64, fn func(*Record) error) (*Record, uint64, error) {
	k := key(sessionID, planID)
	var before shape
	var last *store.Entry[Record]
	if from != nil {
		last = &store.Entry[Record]{Key: k, Value: from, Revision: rev}
	}
	e, err := r.kv.Change(ctx, k, store.Change[Record]{
		From: last,
		Apply: func(rec *Record) error {
			before = shapeOf(rec)
			if err := fn(rec); err != nil {
				return err
			}
			if err := r.seal(before, rec); err != nil {
				return err
			}
			rec.UpdatedAt = time.Now().UTC()
			return nil
		},
		Write: func(ctx context.Context, rec *Record) ([]byte, func(error), error) {
			b, p, err := r.charged(ctx, before, rec, k)
			if err != nil {
				return nil, nil, err
			}
			return b, func(err error) { p.Finish(ctx, err) }, nil
		},
	})
	if err != nil {
		return e.Value, e.Revision, planErr(planID, err)
	}
	return e.Value, e.Revision, nil
}
