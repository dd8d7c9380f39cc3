package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSequentialStepsShareTheirJob: each step of a sequential plan is
// started by the runner that completed the one before, in the checkpoint
// that stores that one's output, under the plan's first job: one job for
// the whole plan, every step run once.
func TestSequentialStepsShareTheirJob(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	sess := mustSession(t, e)
	// A first job handed back once (plan/execute's write slower than the
	// runner on a loaded machine) is delivered again and that plan runs a
	// job per step, as before the change: up to three plans are tried, one
	// must run on a single job. Without the change none does.
	var seen []string
	for try := range 3 {
		id := fmt.Sprintf("seq%d", try)
		mustCreate(t, e, sess, id, definition(step("a", "echo", `{"i":1}`), step("b", "echo", `{"i":2}`),
			step("c", "echo", `{"i":3}`), step("d", "echo", `{"i":4}`)))
		mustExecute(t, e, sess, id, ExecuteOptions{})
		if st := waitFor(t, e, sess, id, "completion", finished); st.Status != StatusCompleted {
			t.Fatalf("status %s error %+v", st.Status, st.Error)
		}
		rec := mustRecord(t, e, sess, id)
		jobs := map[uint64]int{}
		var attempts []int
		for _, s := range rec.Checkpoint.Steps {
			jobs[s.Job]++
			attempts = append(attempts, s.Attempts)
		}
		if diff := cmp.Diff([]int{1, 1, 1, 1}, attempts); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
		if len(jobs) == 1 {
			return
		}
		seen = append(seen, fmt.Sprintf("%s: %d jobs %v", id, len(jobs), jobs))
	}
	t.Errorf("no plan's steps ran under one job: %v", seen)
}

// TestChainedStepsKeepPluginConcurrency: a runner starts the step it made
// ready only when the step's plugin has room at once; two plans of two
// steps each on a plugin with concurrency 1 never run two steps at a time
// (the waiting plan's step gets the instance first).
func TestChainedStepsKeepPluginConcurrency(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	n := burnIterations(t, e, 300*time.Millisecond)
	sess := mustSession(t, e)
	burn := fmt.Sprintf(`{"n":%d}`, n)
	for _, id := range []string{"p", "q"} {
		mustCreate(t, e, sess, id, definition(step("a", "solo_burn", burn), step("b", "solo_burn", burn)))
	}
	for _, id := range []string{"p", "q"} {
		mustExecute(t, e, sess, id, ExecuteOptions{})
	}
	type run struct {
		name       string
		start, end time.Time
	}
	var runs []run
	for _, id := range []string{"p", "q"} {
		st := waitFor(t, e, sess, id, "completion", finished)
		if st.Status != StatusCompleted {
			t.Fatalf("plan %s: status %s error %+v", id, st.Status, st.Error)
		}
		for _, s := range []string{"a", "b"} {
			a, b := interval(t, st, s)
			runs = append(runs, run{id + "/" + s, a, b})
		}
	}
	for i, x := range runs {
		for _, y := range runs[i+1:] {
			if x.start.Before(y.end) && y.start.Before(x.end) {
				t.Errorf("%s (%v–%v) and %s (%v–%v) overlap", x.name, x.start, x.end, y.name, y.start, y.end)
			}
		}
	}
}
