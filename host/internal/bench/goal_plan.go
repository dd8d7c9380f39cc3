package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// planSteps is the length of P8's sequential plans.
const planSteps = 10

// p8 measures what a plan adds to each step beyond the skill call itself:
// queueing the step's job, checkpointing its output, starting the next.
func (h *Harness) p8(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P8", "plan step overhead", err)} }
	plugins, err := h.dir("p8-plugins")
	if err == nil {
		err = WriteEchoPlugin(plugins)
	}
	data, derr := h.dir("p8-data")
	if err = firstErr(err, derr); err != nil {
		return fail(err)
	}
	sh, err := h.startHost(ctx, "p8-skillhost", plugins, data)
	if err != nil {
		return fail(err)
	}
	defer sh.Stop(10 * time.Second)
	sid, err := newSession(sh.Addr)
	if err != nil {
		return fail(err)
	}
	skill, err := skillTime(sh.Addr, sid, 50)
	if err != nil {
		return fail(err)
	}
	steps := make([]map[string]any, planSteps)
	for i := range steps {
		steps[i] = map[string]any{"id": fmt.Sprintf("s%d", i), "type": "skill", "action": "echo", "params": map[string]any{"i": i}}
	}
	def := map[string]any{"name": "bench", "steps": steps}
	plans := max(3, int(20*h.Samples))
	var over []float64
	for range plans {
		d, err := runPlan(ctx, sh.Addr, sid, def)
		if err != nil {
			return fail(err)
		}
		over = append(over, float64(d)/planSteps-float64(skill))
	}
	slices.Sort(over)
	p50 := time.Duration(over[len(over)/2])
	row := Row{ID: "P8", Metric: "plan step overhead (p50)",
		Baseline: fmt.Sprintf("limit 2 ms per step over the skill call (%v)", skill.Round(time.Microsecond)),
		Subject:  fmt.Sprintf("%.2f ms per step", p50.Seconds()*1e3),
		Ratio:    SpreadOf([]float64{p50.Seconds() / 0.002})}
	atMost(&row, 1)
	row.Notes = append(row.Notes, fmt.Sprintf("%d plans of %d sequential echo steps each; per plan, (finished_at − started_at) / %d minus the skill call's own time (the median duration_us of 50 direct skill/execute calls); the ratio is the p50 over 2 ms; plan timestamps have millisecond precision (±0.1 ms per step)", plans, planSteps, planSteps))
	return []Row{row}
}

// skillTime is the median duration the host reports for n echo calls.
func skillTime(addr, sid string, n int) (time.Duration, error) {
	var ds []float64
	for range n {
		var out struct {
			Accounting struct {
				DurationUS int64 `json:"duration_us"`
			} `json:"accounting"`
		}
		if err := call(addr, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "echo", "skill_params": map[string]any{"i": 0}}, &out); err != nil {
			return 0, err
		}
		ds = append(ds, float64(out.Accounting.DurationUS))
	}
	return time.Duration(median(ds)) * time.Microsecond, nil
}

// runPlan creates and executes a plan and returns its run time as the
// host recorded it (finished_at − started_at).
func runPlan(ctx context.Context, addr, sid string, def map[string]any) (time.Duration, error) {
	var created struct {
		PlanID string `json:"plan_id"`
	}
	if err := call(addr, "_cleveragents/plan/create", map[string]any{"session_id": sid, "plan_definition": def}, &created); err != nil {
		return 0, err
	}
	if err := call(addr, "_cleveragents/plan/execute", map[string]any{"session_id": sid, "plan_id": created.PlanID}, nil); err != nil {
		return 0, err
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		var st struct {
			Status     string `json:"status"`
			StartedAt  string `json:"started_at"`
			FinishedAt string `json:"finished_at"`
		}
		if err := call(addr, "_cleveragents/plan/status", map[string]any{"session_id": sid, "plan_id": created.PlanID}, &st); err != nil {
			return 0, err
		}
		switch st.Status {
		case "completed":
			start, err1 := time.Parse(time.RFC3339Nano, st.StartedAt)
			end, err2 := time.Parse(time.RFC3339Nano, st.FinishedAt)
			if err := firstErr(err1, err2); err != nil {
				return 0, fmt.Errorf("plan timestamps %q, %q: %w", st.StartedAt, st.FinishedAt, err)
			}
			return end.Sub(start), nil
		case "failed", "cancelled":
			return 0, fmt.Errorf("plan %s %s", created.PlanID, st.Status)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("plan %s still %s after 60 s", created.PlanID, st.Status)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}
