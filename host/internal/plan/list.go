package plan

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// Bounds of plan/list.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
	// maxListScan caps the records one plan/list reads when a status
	// filter skips plans; the page then ends early with a cursor.
	maxListScan = 1000
	// maxListBytes caps the record bytes one plan/list decodes (records
	// are up to plans.max_record each); the page then ends early with a
	// cursor, having returned at least one plan.
	maxListBytes = 4 << 20
)

// ListRequest is the input of List.
type ListRequest struct {
	SessionID string
	Status    string // "" = any
	Cursor    string // the next_cursor of the previous page ("" = first page)
	Limit     int    // 0 = DefaultListLimit
}

// PlanSummary is one plan in plan/list.
type PlanSummary struct {
	PlanID         string  `json:"plan_id"`
	Name           string  `json:"name"`
	Status         string  `json:"status"`
	ExecutionID    *string `json:"execution_id"`
	TotalSteps     int     `json:"total_steps"`
	CompletedSteps int     `json:"completed_steps"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
	StartedAt      *string `json:"started_at"`
	FinishedAt     *string `json:"finished_at"`
}

// ListResult is the result of plan/list: plans ordered by plan id.
type ListResult struct {
	Plans      []PlanSummary `json:"plans"`
	NextCursor *string       `json:"next_cursor"` // null on the last page
}

// List returns a page of the session's plans, ordered by plan id.
func (m *Manager) List(ctx context.Context, in ListRequest) (*ListResult, error) {
	if _, err := m.requireSession(ctx, in.SessionID); err != nil {
		return nil, err
	}
	switch in.Status {
	case "", StatusCreated, StatusExecuting, StatusCompleted, StatusFailed, StatusCancelled:
	default:
		return nil, badField("status", "must be one of created, executing, completed, failed, cancelled")
	}
	if in.Limit == 0 {
		in.Limit = DefaultListLimit
	}
	if in.Limit < 1 || in.Limit > MaxListLimit {
		return nil, badField("limit", fmt.Sprintf("must be 1..%d", MaxListLimit))
	}
	ids, err := m.recs.planIDs(ctx, in.SessionID)
	if err != nil {
		return nil, err
	}
	start := sort.SearchStrings(ids, in.Cursor)
	if start < len(ids) && ids[start] == in.Cursor {
		start++
	}
	out := &ListResult{Plans: []PlanSummary{}}
	scanned, read, last := 0, 0, ""
	for _, id := range ids[start:] {
		if len(out.Plans) == in.Limit || scanned == maxListScan {
			out.NextCursor = &last
			break
		}
		raw, err := m.recs.raw(ctx, in.SessionID, id)
		if errors.Is(err, fault.ErrPlanNotFound) {
			scanned, last = scanned+1, id
			continue // expired or deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		// Counted before it is decoded: a page of large records ends early.
		if read+len(raw) > m.listBytes && len(out.Plans) > 0 {
			out.NextCursor = &last
			break
		}
		scanned, read, last = scanned+1, read+len(raw), id
		var rec listed
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("plan: decode record %s: %w", id, err)
		}
		if in.Status != "" && rec.Status != in.Status {
			continue
		}
		completed := 0
		for _, st := range rec.Checkpoint.Steps {
			if st.Status == StepCompleted {
				completed++
			}
		}
		s := PlanSummary{
			PlanID: rec.PlanID, Name: rec.Definition.Name, Status: rec.Status,
			TotalSteps: len(rec.Definition.Steps), CompletedSteps: completed,
			CreatedAt: jsonrpc.Timestamp(rec.CreatedAt), UpdatedAt: jsonrpc.Timestamp(rec.UpdatedAt),
			StartedAt: optTimestamp(rec.StartedAt), FinishedAt: optTimestamp(rec.FinishedAt),
		}
		if rec.ExecutionID != "" {
			s.ExecutionID = &rec.ExecutionID
		}
		out.Plans = append(out.Plans, s)
	}
	return out, nil
}

// listed is the part of a record plan/list reads: decoding it allocates
// no definition params, inputs or step outputs.
type listed struct {
	PlanID     string `json:"plan_id"`
	Definition struct {
		Name  string     `json:"name"`
		Steps []struct{} `json:"steps"`
	} `json:"definition"`
	Status      string     `json:"status"`
	ExecutionID string     `json:"execution_id"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	Checkpoint  struct {
		Steps []struct {
			Status string `json:"status"`
		} `json:"steps"`
	} `json:"checkpoint"`
}

// raw returns a plan's stored record undecoded; PlanNotFound when absent.
func (r *records) raw(ctx context.Context, sessionID, planID string) ([]byte, error) {
	raw, err := r.kv.GetRaw(ctx, key(sessionID, planID))
	if err != nil {
		return nil, planErr(planID, err)
	}
	return raw.Data, nil
}

// planIDs lists the plan ids of a session, sorted.
func (r *records) planIDs(ctx context.Context, sessionID string) ([]string, error) {
	prefix := base64.RawURLEncoding.EncodeToString([]byte(sessionID)) + "."
	var ids []string
	for k, err := range r.kv.Keys(ctx, prefix+"*") {
		if err != nil {
			return nil, err
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(k, prefix))
		if err == nil {
			ids = append(ids, string(b))
		}
	}
	sort.Strings(ids)
	return ids, nil
}
