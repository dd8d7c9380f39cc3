package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// keyCtx is a context acting as API key id (every scope), and a session
// of that key.
func keyCtx(t *testing.T, e *env, id string) (context.Context, string) {
	t.Helper()
	sum := sha256.Sum256([]byte("sk_" + id))
	keys, err := auth.NewKeySet([]auth.KeySpec{{ID: id, SHA256: hex.EncodeToString(sum[:]), Scopes: []string{"*"}}}, auth.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := keys.Principal(id)
	ctx := auth.With(t.Context(), p)
	s, err := e.st.CreateSession(ctx, store.Session{Owner: p.Owner()})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, s.ID
}

// gate runs the step action "gate" until open is closed, then returns
// {"pad": <n bytes>}; every other action runs on the local plugins.
type gate struct {
	local *LocalExecutor
	open  chan struct{}
	n     int
}

func (g gate) RunStep(ctx context.Context, call StepCall) (*StepOutcome, error) {
	if call.Action != "gate" {
		return g.local.RunStep(ctx, call)
	}
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, fault.Wrap(fault.Canceled, fault.ReasonCanceled, ctx.Err(), "gate closed")
	}
	out, err := json.Marshal(map[string]string{"pad": strings.Repeat("p", g.n)})
	return &StepOutcome{Output: out}, err
}

// withGate makes the env's steps run through a gate (see gate).
func withGate(g *gate) func(*Deps) {
	return func(d *Deps) {
		g.local = NewLocalExecutor(d.Skills)
		d.Executor = g
	}
}

// waitAs is waitFor for the plan of a key's session (ctx acts as the key).
func waitAs(t *testing.T, ctx context.Context, e *env, session, planID string) StatusResult {
	t.Helper()
	var st StatusResult
	testutil.Eventually(t, 60*time.Second, "plan "+planID+" to end", func() bool {
		rec, err := e.m.Status(ctx, session, planID)
		if err != nil {
			t.Fatalf("status %s: %v", planID, err)
		}
		st = StatusOf(rec)
		return finished(st)
	})
	return st
}

// refusedAs fails unless err is -32106 with reason and limit.
func refusedAs(t *testing.T, what string, err error, reason, limit string) {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Kind != fault.ResourceExhausted || fe.Reason != reason || fe.Data["limit"] != limit ||
		!strings.Contains(fe.Msg, limit) {
		t.Fatalf("%s: %v, want -32106 %s naming %s", what, err, reason, limit)
	}
}

// A key at its stored-plan quota is refused with key_quota naming
// plans.max_per_key; another key keeps creating plans; the count holds
// after the plans ran and after a restart.
func TestPlanQuotaIsPerKey(t *testing.T) {
	t.Parallel()
	cfg := plans(func(c *Config) { c.MaxPerKey = 2 })
	e := mustEnv(t, "", cfg)
	alice, sa := keyCtx(t, e, "alice")
	bob, sb := keyCtx(t, e, "bob")
	def := definition(step("s1", "echo", `{"hi":1}`))
	for i := range 2 {
		id := fmt.Sprintf("a%d", i)
		if _, err := e.m.Create(alice, CreateRequest{SessionID: sa, PlanID: id, Definition: def}); err != nil {
			t.Fatalf("alice's plan %d: %v", i, err)
		}
		if _, err := e.m.Execute(alice, sa, id, ExecuteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAs(t, alice, e, sa, id)
	}
	_, err := e.m.Create(alice, CreateRequest{SessionID: sa, PlanID: "a2", Definition: def})
	refusedAs(t, "alice's third plan", err, fault.ReasonKeyQuota, "plans.max_per_key")
	if _, err := e.m.Create(bob, CreateRequest{SessionID: sb, PlanID: "b0", Definition: def}); err != nil {
		t.Fatalf("bob refused while alice is at her quota: %v", err)
	}
	_ = e.st.Close()
	e.stop()

	e2 := mustEnv(t, e.data, cfg)
	_, err = e2.m.Create(alice, CreateRequest{SessionID: sa, PlanID: "a2", Definition: def})
	refusedAs(t, "alice's third plan after a restart", err, fault.ReasonKeyQuota, "plans.max_per_key")
	if _, err := e2.m.Create(bob, CreateRequest{SessionID: sb, PlanID: "b1", Definition: def}); err != nil {
		t.Errorf("bob after a restart: %v", err)
	}
}

// An executing plan counts at the largest record it may grow to: a key's
// byte quota caps how many of its plans execute at once (plan/execute is
// refused with key_quota), frees up as they end, and leaves other keys
// alone.
func TestPlanByteQuotaCountsExecutingPlans(t *testing.T) {
	t.Parallel()
	g := &gate{open: make(chan struct{}), n: 100}
	e := mustEnv(t, "", plans(func(c *Config) { c.MaxRecord = 512 << 10; c.MaxBytesPerKey = 1<<20 + 64<<10 }), withGate(g))
	alice, sa := keyCtx(t, e, "alice")
	bob, sb := keyCtx(t, e, "bob")
	def := definition(step("s1", "gate", ""))
	for _, id := range []string{"p1", "p2", "p3"} {
		if _, err := e.m.Create(alice, CreateRequest{SessionID: sa, PlanID: id, Definition: def}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"p1", "p2"} {
		if _, err := e.m.Execute(alice, sa, id, ExecuteOptions{}); err != nil {
			t.Fatalf("execute %s: %v", id, err)
		}
	}
	_, err := e.m.Execute(alice, sa, "p3", ExecuteOptions{})
	refusedAs(t, "a third executing plan", err, fault.ReasonKeyQuota, "plans.max_bytes_per_key")
	if _, err := e.m.Create(bob, CreateRequest{SessionID: sb, PlanID: "b", Definition: def}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Execute(bob, sb, "b", ExecuteOptions{}); err != nil {
		t.Errorf("bob's plan refused while alice is at her quota: %v", err)
	}
	close(g.open)
	for _, id := range []string{"p1", "p2"} {
		if st := waitAs(t, alice, e, sa, id); st.Status != StatusCompleted {
			t.Fatalf("%s: %s %+v", id, st.Status, st.Error)
		}
	}
	if _, err := e.m.Execute(alice, sa, "p3", ExecuteOptions{}); err != nil {
		t.Errorf("alice's plans ended, but p3 is still refused: %v", err)
	}
	waitAs(t, alice, e, sa, "p3")
	waitAs(t, bob, e, sb, "b")
}

// A plans bucket filled to its admission limit refuses plan/create and
// plan/execute of every principal with storage_full (never -32603), and an
// executing plan still checkpoints its step output in the reserve and
// completes.
func TestPlanReserveKeepsRoomForExecutingPlans(t *testing.T) {
	t.Parallel()
	g := &gate{open: make(chan struct{}), n: 300 << 10}
	e := mustEnv(t, "", plans(func(c *Config) { c.MaxRecord = 512 << 10; c.MaxBucket = 4 << 20; c.Reserve = 1 << 20 }), withGate(g))
	local, sl := localCtx(), mustSession(t, e)
	bob, sb := keyCtx(t, e, "bob")
	if _, err := e.m.Create(local, CreateRequest{SessionID: sl, PlanID: "run", Definition: definition(step("s1", "gate", ""))}); err != nil {
		t.Fatal(err)
	}
	mustExecute(t, e, sl, "run", ExecuteOptions{})
	if _, err := e.m.Create(bob, CreateRequest{SessionID: sb, PlanID: "b", Definition: definition(step("s1", "echo", ""))}); err != nil {
		t.Fatal(err)
	}
	big := definition(step("s1", "echo", `{"pad":"`+strings.Repeat("x", 200<<10)+`"}`))
	var err error
	for i := 0; err == nil; i++ {
		if i > 30 {
			t.Fatal("the plans bucket never stopped admitting plans")
		}
		_, err = e.m.Create(local, CreateRequest{SessionID: sl, PlanID: fmt.Sprintf("fill%d", i), Definition: big})
	}
	refusedAs(t, "a plan into the full bucket", err, fault.ReasonStorageFull, "plans.reserve")
	_, err = e.m.Create(bob, CreateRequest{SessionID: sb, PlanID: "b-big", Definition: big})
	refusedAs(t, "a key's plan into the full bucket", err, fault.ReasonStorageFull, "plans.reserve")
	_, err = e.m.Execute(bob, sb, "b", ExecuteOptions{})
	refusedAs(t, "a key's execution in the full bucket", err, fault.ReasonStorageFull, "plans.reserve")
	close(g.open)
	st := waitFor(t, e, sl, "run", "completion", finished)
	if st.Status != StatusCompleted || len(st.StepResults["s1"]) < 300<<10 {
		t.Fatalf("the executing plan ended %s (%+v) with %d bytes of output", st.Status, st.Error, len(st.StepResults["s1"]))
	}
}
