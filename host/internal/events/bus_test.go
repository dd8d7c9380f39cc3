package events

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func mustStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func mustBus(t *testing.T, st *store.Store, cfg Config) *Bus {
	t.Helper()
	b, err := Open(context.Background(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withEvents is the default events.* section with edit applied.
func withEvents(edit func(*Config)) Config {
	c := config.Defaults().Events
	edit(&c)
	return c
}

func mustPublish(t *testing.T, b *Bus, e Event) bool {
	t.Helper()
	dup, err := b.Publish(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return dup
}

// collect reads n events from sub.
func collect(t *testing.T, sub interface {
	Next(context.Context) (Event, error)
}, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for range n {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		out = append(out, fmt.Sprintf("%d %s %s/%s %s", ev.Seq, ev.Type, ev.SessionID, ev.PlanID, ev.Data))
	}
	return out
}

func TestSubscribeFiltersAndResumes(t *testing.T) {
	t.Parallel()
	b := mustBus(t, mustStore(t, t.TempDir()), Config{})
	ctx := context.Background()
	all, err := b.Subscribe(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	one, err := b.Subscribe(ctx, Filter{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	plan, err := b.Subscribe(ctx, Filter{SessionID: "s1", PlanID: "p.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	mustPublish(t, b, Event{Type: PlanStarted, SessionID: "s1", PlanID: "p.1", Data: json.RawMessage(`{"n":1}`)})
	mustPublish(t, b, Event{Type: AgentNotify, SessionID: "s2", Data: json.RawMessage(`{"n":2}`)})
	mustPublish(t, b, Event{Type: AgentNotify, SessionID: "s1", Data: json.RawMessage(`{"n":3}`)})
	mustPublish(t, b, Event{Type: PlanStepStarted, SessionID: "s1", PlanID: "p.1", Data: json.RawMessage(`{"n":4}`)})
	mustPublish(t, b, Event{Type: AgentNotify, Data: json.RawMessage(`{"n":5}`)})

	if diff := cmp.Diff([]string{
		`1 plan.started s1/p.1 {"n":1}`, `2 agent.notify s2/ {"n":2}`, `3 agent.notify s1/ {"n":3}`,
		`4 plan.step.started s1/p.1 {"n":4}`, `5 agent.notify / {"n":5}`,
	}, collect(t, all, 5)); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`1 plan.started s1/p.1 {"n":1}`, `3 agent.notify s1/ {"n":3}`, `4 plan.step.started s1/p.1 {"n":4}`},
		collect(t, one, 3)); diff != "" {
		t.Errorf("session s1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`1 plan.started s1/p.1 {"n":1}`, `4 plan.step.started s1/p.1 {"n":4}`}, collect(t, plan, 2)); diff != "" {
		t.Errorf("plan p.1 (-want +got):\n%s", diff)
	}
	resumed, err := b.Subscribe(ctx, Filter{SessionID: "s1", After: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	if diff := cmp.Diff([]string{`3 agent.notify s1/ {"n":3}`, `4 plan.step.started s1/p.1 {"n":4}`}, collect(t, resumed, 2)); diff != "" {
		t.Errorf("resumed after 1 (-want +got):\n%s", diff)
	}
	replay, err := b.Subscribe(ctx, Filter{Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	if got := collect(t, replay, 1); !strings.HasPrefix(got[0], "1 plan.started") {
		t.Errorf("replay starts with %q", got[0])
	}
}

// TestResumeAcrossRestart: events survive the store's restart, and a
// subscriber resumes after the last id it saw.
func TestResumeAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := mustStore(t, dir)
	b := mustBus(t, st, Config{})
	for i := range 3 {
		mustPublish(t, b, Event{Type: PlanStepStarted, SessionID: "s", PlanID: "p", Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b = mustBus(t, mustStore(t, dir), Config{})
	sub, err := b.Subscribe(context.Background(), Filter{SessionID: "s", After: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	mustPublish(t, b, Event{Type: PlanCompleted, SessionID: "s", PlanID: "p"})
	if diff := cmp.Diff([]string{`3 plan.step.started s/p {"i":2}`, `4 plan.completed s/p {}`}, collect(t, sub, 2)); diff != "" {
		t.Errorf("resumed (-want +got):\n%s", diff)
	}
}

func TestPublishDedupes(t *testing.T) {
	t.Parallel()
	b := mustBus(t, mustStore(t, t.TempDir()), Config{})
	e := Event{ID: "notify/x/y/req-1", Type: AgentNotify, SessionID: "s"}
	if mustPublish(t, b, e) {
		t.Fatal("the first publish is a duplicate")
	}
	if !mustPublish(t, b, e) {
		t.Error("the second publish with the same id is not a duplicate")
	}
	e.ID = "notify/x/y/req-2"
	if mustPublish(t, b, e) {
		t.Error("another id is a duplicate")
	}
	e.ID = ""
	first, second := mustPublish(t, b, e), mustPublish(t, b, e)
	if first || second {
		t.Error("events without an id are deduplicated")
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	st := mustStore(t, t.TempDir())
	b := mustBus(t, st, withEvents(func(c *Config) { c.MaxSubscribers, c.MaxSubscribersPerKey = 2, 0 }))
	ctx := context.Background()
	s1, err := b.Subscribe(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := b.Subscribe(ctx, Filter{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Subscribe(ctx, Filter{})
	if fe := fault.From(err); err == nil || fe.Kind != fault.ResourceExhausted || fe.Reason != fault.ReasonTooManySubscribers {
		t.Fatalf("third subscription: %v", err)
	}
	_ = s1.Close()
	_ = s1.Close() // twice is harmless and frees one slot only
	s3, err := b.Subscribe(ctx, Filter{})
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	_, err = b.Subscribe(ctx, Filter{})
	if err == nil {
		t.Fatal("a double Close freed two slots")
	}
	_, _ = s2.Close(), s3.Close()

	_, err = b.Publish(ctx, Event{Type: AgentNotify, Data: json.RawMessage(`"` + strings.Repeat("x", MaxEventBytes) + `"`)})
	if err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("oversized event: %v", err)
	}
	if _, err := Open(ctx, st, withEvents(func(c *Config) { c.Retention, c.DedupeWindow = time.Hour, 2*time.Hour })); err == nil {
		t.Error("a dedupe window longer than the retention was accepted")
	}
}

func TestSourceChecksTheQuery(t *testing.T) {
	t.Parallel()
	st := mustStore(t, t.TempDir())
	src := Source{Bus: mustBus(t, st, Config{}), Sessions: st}
	ctx := auth.With(context.Background(), auth.Local("test"))
	sess, err := st.CreateSession(ctx, store.Session{})
	if err != nil {
		t.Fatal(err)
	}
	owned, err := st.CreateSession(ctx, store.Session{Owner: auth.Local("test").Owner()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		ctx    context.Context
		q      Query
		kind   fault.Kind
		reason string
	}{
		{"no principal", context.Background(), Query{}, fault.Unauthorized, fault.ReasonUnauthenticated},
		{"another principal's session", auth.With(context.Background(), auth.Local("other")), Query{SessionID: owned.ID}, fault.SessionNotFound, fault.ReasonSessionNotFound},
		{"unknown session", ctx, Query{SessionID: "sess_nope"}, fault.SessionNotFound, fault.ReasonSessionNotFound},
		{"plan without session", ctx, Query{PlanID: "p"}, fault.InvalidParams, fault.ReasonInvalidParams},
		{"bad last event id", ctx, Query{SessionID: sess.ID, LastEventID: "abc"}, fault.InvalidParams, fault.ReasonInvalidParams},
		{"negative last event id", ctx, Query{LastEventID: "-1"}, fault.InvalidParams, fault.ReasonInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := src.Open(tt.ctx, tt.q)
			if fe := fault.From(err); err == nil || fe.Kind != tt.kind || fe.Reason != tt.reason {
				t.Errorf("error %v, want %v %s", err, tt.kind, tt.reason)
			}
		})
	}
	stream, err := src.Open(ctx, Query{SessionID: sess.ID, LastEventID: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if _, err := src.Bus.Publish(ctx, Event{Type: AgentNotify, SessionID: sess.ID, Data: json.RawMessage(`{"a":"b\nc"}`)}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	frame, err := stream.Next(rctx)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(frame), "\n")
	if len(lines) != 5 || lines[0] != "id: 1" || lines[1] != "event: agent.notify" || !strings.HasPrefix(lines[2], "data: {") || lines[3] != "" || lines[4] != "" {
		t.Fatalf("frame %q", frame)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[2], "data: ")), &env); err != nil {
		t.Fatal(err)
	}
	if env["id"] != "1" || env["session_id"] != sess.ID || env["data"].(map[string]any)["a"] != "b\nc" {
		t.Errorf("envelope %v", env)
	}
}

// A holder at its share is refused with key_quota while another holder
// still subscribes; the host-wide cap stays too_many_subscribers.
func TestHolderShare(t *testing.T) {
	t.Parallel()
	st := mustStore(t, t.TempDir())
	b := mustBus(t, st, withEvents(func(c *Config) { c.MaxSubscribers, c.MaxSubscribersPerKey = 3, 2 }))
	ctx := context.Background()
	var open []*Subscription
	defer func() {
		for _, s := range open {
			_ = s.Close()
		}
	}()
	subscribe := func(holder string) error {
		s, err := b.Subscribe(ctx, Filter{Holder: holder})
		if err == nil {
			open = append(open, s)
		}
		return err
	}
	for range 2 {
		if err := subscribe("key:a"); err != nil {
			t.Fatalf("a within its share: %v", err)
		}
	}
	fe := testutil.MustFault(t, subscribe("key:a"), fault.ResourceExhausted, fault.ReasonKeyQuota)
	if fe.Data["limit"] != "events.max_subscribers_per_key" {
		t.Errorf("refusal data %v; want limit events.max_subscribers_per_key", fe.Data)
	}
	if err := subscribe("key:b"); err != nil {
		t.Fatalf("b while a is at its share: %v", err)
	}
	testutil.MustFault(t, subscribe("key:c"), fault.ResourceExhausted, fault.ReasonTooManySubscribers)
	if got := b.Subscribers().Held("key:a"); got != 2 {
		t.Errorf("a holds %d, want 2", got)
	}
}
