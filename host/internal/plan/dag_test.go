package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// work is a step of the stepper plugin's work skill.
func work(id string, in map[string]any, deps ...string) map[string]any {
	s := map[string]any{"id": id, "type": "agent", "agent": "stepper", "action": "work", "params": in}
	if deps != nil {
		s["depends_on"] = deps
	}
	return s
}

// diamond is A → B, C → D, where B and C sleep and D uses both.
func diamond(sleepMS int) json.RawMessage {
	return definition(
		work("A", map[string]any{"key": "A", "value": map[string]any{"n": 2, "label": "from-a"}}),
		work("B", map[string]any{"key": "B", "sleep_ms": sleepMS, "value": "${steps.A.output.value.n}"}, "A"),
		work("C", map[string]any{"key": "C", "sleep_ms": sleepMS, "value": map[string]any{"label": "c-${steps.A.output.value.label}-${steps.A.output.run}"}}, "A"),
		work("D", map[string]any{"key": "D", "value": map[string]any{"b": "${steps.B.output.value}", "c": "${steps.C.output.value.label}"}}, "B", "C"),
	)
}

// interval is a step's recorded [start, finish].
func interval(t *testing.T, st StatusResult, id string) (time.Time, time.Time) {
	t.Helper()
	for _, s := range st.Steps {
		if s.ID != id {
			continue
		}
		if s.StartedAt == nil || s.FinishedAt == nil {
			t.Fatalf("step %s has no interval: %+v", id, s)
		}
		a, err1 := time.Parse(time.RFC3339, *s.StartedAt)
		b, err2 := time.Parse(time.RFC3339, *s.FinishedAt)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return a, b
	}
	t.Fatalf("no step %s", id)
	return time.Time{}, time.Time{}
}

// mustRuns reads how often the stepper's work ran with key (session context).
func mustRuns(t *testing.T, e *env, sess, key string) int {
	t.Helper()
	v, err := e.st.GetContext(context.Background(), sess, "runs:"+key)
	if err != nil {
		t.Fatalf("runs:%s: %v", key, err)
	}
	var n int
	if err := json.Unmarshal(v.Value, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDiamondPlan(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	tests := []struct {
		name     string
		parallel bool
	}{
		{"parallel", true},
		{"sequential", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sess := mustSession(t, e)
			mustCreate(t, e, sess, "diamond", diamond(1200))
			mustExecute(t, e, sess, "diamond", ExecuteOptions{Parallel: tt.parallel})
			st := waitFor(t, e, sess, "diamond", "completion", finished)
			if st.Status != StatusCompleted {
				t.Fatalf("status %s error %+v", st.Status, st.Error)
			}
			wantD := `{"key":"D","run":1,"value":{"b":2,"c":"c-from-a-1"}}`
			if diff := cmp.Diff(wantD, string(st.Result)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]int{"A": 1, "B": 1, "C": 1, "D": 1}, st.Attempts); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			if len(st.StepResults) != 4 || string(st.StepResults["D"]) != wantD || st.Parallel != tt.parallel {
				t.Errorf("step_results %v parallel %v", st.StepResults, st.Parallel)
			}
			bStart, bEnd := interval(t, st, "B")
			cStart, cEnd := interval(t, st, "C")
			_, aEnd := interval(t, st, "A")
			dStart, _ := interval(t, st, "D")
			overlap := bStart.Before(cEnd) && cStart.Before(bEnd)
			if overlap != tt.parallel {
				t.Errorf("B ran %v–%v, C %v–%v: overlap %v, want %v", bStart, bEnd, cStart, cEnd, overlap, tt.parallel)
			}
			if !tt.parallel && cStart.Before(bEnd) {
				t.Errorf("sequential plan ran C before B finished")
			}
			if bStart.Before(aEnd) || cStart.Before(aEnd) || dStart.Before(bEnd) || dStart.Before(cEnd) {
				t.Errorf("a step started before its dependencies finished: %+v", st.Steps)
			}
			for _, key := range []string{"A", "B", "C", "D"} {
				if n := mustRuns(t, e, sess, key); n != 1 {
					t.Errorf("step %s ran %d times", key, n)
				}
			}
		})
	}
}

// TestRestartMidParallelSteps crashes the runner (its store closed under
// it) while B and C run, then starts a new one on the same data: the plan
// completes, A ran once, B and C ran again, D once.
func TestRestartMidParallelSteps(t *testing.T) {
	t.Parallel()
	cfg := plans(func(c *Config) { c.AckWait = time.Second })
	e := mustEnv(t, "", cfg)
	sess := mustSession(t, e)
	mustCreate(t, e, sess, "crash", diamond(2500))
	mustExecute(t, e, sess, "crash", ExecuteOptions{Parallel: true})
	waitFor(t, e, sess, "crash", "B and C to run", func(s StatusResult) bool {
		return len(s.Progress.RunningSteps) == 2 && s.Attempts["B"] == 1 && s.Attempts["C"] == 1
	})
	_ = e.st.Close()
	e.stop()

	e2 := mustEnv(t, e.data, cfg)
	st := waitFor(t, e2, sess, "crash", "completion", finished)
	if st.Status != StatusCompleted {
		t.Fatalf("status %s error %+v", st.Status, st.Error)
	}
	if diff := cmp.Diff(map[string]int{"A": 1, "B": 2, "C": 2, "D": 1}, st.Attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if n := mustRuns(t, e2, sess, "A"); n != 1 {
		t.Errorf("A ran %d times", n)
	}
	if diff := cmp.Diff(`{"key":"D","run":1,"value":{"b":2,"c":"c-from-a-1"}}`, string(st.Result)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// TestParallelStepsAreBounded: parallel steps never run more at once than
// plans.workers allows, nor more of one plugin than its concurrency (they
// wait for it instead of failing with pool_saturated).
func TestParallelStepsAreBounded(t *testing.T) {
	t.Parallel()
	one := mustEnv(t, "", plans(func(c *Config) { c.Workers = 1 }))
	many := mustEnv(t, "", Config{})
	n := burnIterations(t, many, 500*time.Millisecond)
	burn := func(id, skill string) map[string]any {
		s := step(id, skill, fmt.Sprintf(`{"n":%d}`, n))
		s["depends_on"] = []string{}
		return s
	}
	tests := []struct {
		name  string
		e     *env
		skill string
	}{
		{"one worker", one, "burn"},
		{"plugin concurrency 1", many, "solo_burn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sess := mustSession(t, tt.e)
			mustCreate(t, tt.e, sess, "wide", definition(burn("x", tt.skill), burn("y", tt.skill), burn("z", tt.skill)))
			mustExecute(t, tt.e, sess, "wide", ExecuteOptions{Parallel: true})
			st := waitFor(t, tt.e, sess, "wide", "completion", finished)
			if st.Status != StatusCompleted {
				t.Fatalf("status %s error %+v", st.Status, st.Error)
			}
			ids := []string{"x", "y", "z"}
			for i, a := range ids {
				for _, b := range ids[i+1:] {
					aStart, aEnd := interval(t, st, a)
					bStart, bEnd := interval(t, st, b)
					if aStart.Before(bEnd) && bStart.Before(aEnd) {
						t.Errorf("%s (%v–%v) and %s (%v–%v) overlap", a, aStart, aEnd, b, bStart, bEnd)
					}
				}
			}
		})
	}
}
