package plan

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// crash ends e as a host death does: the store goes first (nothing the
// runner does afterwards reaches it), then the runner.
func crash(e *env) {
	_ = e.st.Close()
	e.stop()
}

// slowPlan is echo, a burn of n iterations, echo.
func slowPlan(n int64) []byte {
	return definition(step("first", "echo", `{"i":1}`), step("slow", "burn", fmt.Sprintf(`{"n":%d}`, n)), step("last", "echo", `{"i":3}`))
}

// TestPoisonStepIsQuarantined: the host dies while the same step runs,
// twice (its store closed under the running runner, as a kill -9 leaves
// it); the third host does not run the step again: the plan fails with
// -32106 quarantined naming both dead boots, the host logs it at warn, and
// it goes on serving other plans.
func TestPoisonStepIsQuarantined(t *testing.T) {
	t.Parallel()
	cfg := plans(func(c *Config) { c.AckWait = time.Second })
	e := mustEnv(t, "", cfg)
	n := burnIterations(t, e, 20*time.Second) // never finishes before the crash
	sess := mustSession(t, e)
	mustCreate(t, e, sess, "poison", slowPlan(n))
	mustExecute(t, e, sess, "poison", ExecuteOptions{})
	logs := &testutil.LogBuffer{}
	logged := func(d *Deps) {
		d.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	var boots []any // as plan/status decodes them
	for start := 1; start <= 2; start++ {
		waitFor(t, e, sess, "poison", fmt.Sprintf("start %d of the slow step", start), func(s StatusResult) bool {
			return s.Attempts["slow"] == start && len(s.Progress.RunningSteps) == 1
		})
		boots = append(boots, e.st.Boot())
		crash(e)
		e = mustEnv(t, e.data, cfg, logged)
	}
	st := waitFor(t, e, sess, "poison", "quarantine", finished)
	if st.Status != StatusFailed || st.Error == nil || st.Error.Code != fault.ResourceExhausted.Code() || st.Error.Details["reason"] != fault.ReasonQuarantined {
		t.Fatalf("status %s error %+v, want failed with quarantined", st.Status, st.Error)
	}
	if diff := cmp.Diff(map[string]any{"step_id": "slow", "attempt": float64(2), crashedBoots: boots},
		map[string]any{"step_id": st.Error.Details["step_id"], "attempt": st.Error.Details["attempt"], crashedBoots: st.Error.Details[crashedBoots]}); diff != "" {
		t.Errorf("error details (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"first": 1, "slow": 2}, st.Attempts); diff != "" {
		t.Errorf("attempts (-want +got): the step ran a third time\n%s", diff)
	}
	line := ""
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "quarantined") {
			line = l
		}
	}
	host, _ := os.Hostname()
	for _, want := range []string{"level=WARN", "plan_id=poison", "step_id=slow", "crashes=2", fmt.Sprintf("boots=%s,%s", boots...),
		fmt.Sprintf("hosts=%s,%s", host, host)} {
		if !strings.Contains(line, want) {
			t.Errorf("quarantine log line %q lacks %q; logs:\n%s", line, want, logs.String())
		}
	}

	mustCreate(t, e, sess, "next", definition(step("s", "echo", `{"ok":true}`)))
	mustExecute(t, e, sess, "next", ExecuteOptions{})
	if st := waitFor(t, e, sess, "next", "completion", finished); st.Status != StatusCompleted {
		t.Errorf("the next plan is %s, error %+v", st.Status, st.Error)
	}
}

// TestRestartsThatAreNoCrash: with one crash tolerated, a step interrupted
// by graceful shutdowns twice still completes, and a step retried after
// timeouts runs every attempt: neither is a host death.
func TestRestartsThatAreNoCrash(t *testing.T) {
	t.Parallel()
	cfg := plans(func(c *Config) { c.AckWait = time.Second; c.MaxCrashes = 1 })
	t.Run("graceful shutdowns", func(t *testing.T) {
		t.Parallel()
		e := mustEnv(t, "", cfg)
		n := burnIterations(t, e, 20*time.Second)
		sess := mustSession(t, e)
		mustCreate(t, e, sess, "stops", definition(step("slow", "burn", fmt.Sprintf(`{"n":%d}`, n)), step("last", "echo", `{"i":3}`)))
		mustExecute(t, e, sess, "stops", ExecuteOptions{})
		for start := 1; start <= 2; start++ {
			waitFor(t, e, sess, "stops", fmt.Sprintf("start %d", start), func(s StatusResult) bool {
				return s.Attempts["slow"] == start && len(s.Progress.RunningSteps) == 1
			})
			e.stop() // running steps are interrupted and handed back
			_ = e.st.Close()
			e = mustEnv(t, e.data, cfg)
		}
		// The third start runs the step; cancel it rather than wait 20 s.
		waitFor(t, e, sess, "stops", "start 3", func(s StatusResult) bool { return s.Attempts["slow"] == 3 })
		rec := mustRecord(t, e, sess, "stops")
		if runs := rec.Checkpoint.Steps[0].Runs; runs.Crashes() != 0 || len(runs.Open) != 1 || runs.Open[0].Boot != e.st.Boot() {
			t.Errorf("runs %+v, want no crash and this host's run open", runs)
		}
		if _, err := e.m.Cancel(localCtx(), sess, "stops"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("retries", func(t *testing.T) {
		t.Parallel()
		e := mustEnv(t, "", cfg)
		sess := mustSession(t, e)
		s := timeoutStep(step("loop", "loop", ""), 100)
		s["retry"] = map[string]any{"max_attempts": 3}
		mustCreate(t, e, sess, "retries", definition(s))
		mustExecute(t, e, sess, "retries", ExecuteOptions{})
		st := waitFor(t, e, sess, "retries", "failure", finished)
		if st.Error == nil || st.Error.Details["reason"] != fault.ReasonTimeout || st.Attempts["loop"] != 3 {
			t.Errorf("status %s attempts %v error %+v, want a timeout after 3 attempts", st.Status, st.Attempts, st.Error)
		}
	})
}
