package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/faultnet"
	"github.com/skillhost/skillhost/host/internal/natstest"
)

// The wire faults of `make soak-cluster`: every host reaches the NATS
// cluster through a proxy group of its own (faultnet), so one host's link
// can be slowed, throttled, cut or left half-open while the others work.

// soakLinks starts one proxy group per host in front of c.
func soakLinks(t *testing.T, c *natstest.Cluster, n int) []*faultnet.Group {
	t.Helper()
	links := make([]*faultnet.Group, n)
	for i := range links {
		g, err := faultnet.ListenAll(c.URLs())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		links[i] = g
	}
	return links
}

// soakEvent is one event of the run, at a time from its start.
type soakEvent struct {
	at   time.Duration
	name string
	do   func()
}

// soakEvents is the run's timeline: wire faults on one host's link at a
// time (latency, then a bandwidth cap, a deaf link, later a cut and a
// half-open link, each lifted after a while), a host killed with SIGKILL,
// a NATS node stopped. The whole timeline needs SOAK_DURATION of 60s or
// more; a shorter run skips the events past its end.
func soakEvents(t *testing.T, d time.Duration, hosts []*soakHost, links []*faultnet.Group, c *natstest.Cluster) []soakEvent {
	set := func(i int, f faultnet.Faults) func() { return func() { links[i].Set(f) } }
	at := func(tenths int) time.Duration { return d * time.Duration(tenths) / 10 }
	return []soakEvent{
		{at(1), "latency of 100 ms each way on host 0's link", set(0, faultnet.Faults{Latency: 100 * time.Millisecond})},
		{at(2), "latency lifted; host 2's link capped at 32 KiB/s each way", func() {
			links[0].Set(faultnet.Faults{})
			links[2].Set(faultnet.Faults{BytesPerSecond: 32 << 10})
		}},
		{at(3), "bandwidth cap lifted; host 0's link deaf (writes land, answers are lost)", func() {
			links[2].Set(faultnet.Faults{})
			links[0].Set(faultnet.Faults{Deaf: true})
		}},
		{at(3) + 5*time.Second, "host 0's link no longer deaf (deaf for 5 s; its old connection stays dead)", set(0, faultnet.Faults{})},
		{at(4), "kill -9 host 1", func() { hosts[1].kill(t) }},
		{at(5), "host 0's link cut", set(0, faultnet.Faults{Cut: true})},
		{at(5) + 5*time.Second, "host 0's link restored (cut for 5 s)", set(0, faultnet.Faults{})},
		{at(6) + 5*time.Second, "host 2's link half-open (nothing forwarded, nothing closed)", set(2, faultnet.Faults{HalfOpen: true})},
		{at(6) + 15*time.Second, "host 2's link healed (half-open for 10 s; its old connection stays dead)", set(2, faultnet.Faults{})},
		{at(8) + 10*time.Second, "stop NATS node 2", func() { c.Stop(2) }},
	}
}

// queue sends one returnImmediately task and records it once acknowledged:
// whatever happens to its host, it must end (completed, or failed with
// host_lost when its host died before it ran).
func (l *soakLoad) queue(ctx context.Context, first int, sid string) {
	res, ok := l.call(ctx, first, "SendMessage", json.RawMessage(`{"configuration":{"returnImmediately":true},`+
		`"message":{"messageId":"`+sid+`-q","role":"ROLE_USER","parts":[{"data":{"text":"`+sid+`-q"}}],"metadata":{"skillId":"echo"}}}`))
	if !ok {
		return
	}
	if task, _ := res["task"].(map[string]any); task != nil {
		if id, _ := task["id"].(string); id != "" {
			l.mu.Lock()
			l.queued[id] = true
			l.mu.Unlock()
		}
	}
}

// verifyEnded waits (bounded) until every acknowledged returnImmediately
// task has ended, through h, and returns how many never did (or were lost).
func (l *soakLoad) verifyEnded(t *testing.T, h *soakHost) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	one := &soakLoad{hosts: []*soakHost{h}, errs: map[string]int{}, lastErr: map[string]time.Time{}}
	deadline := time.Now().Add(2 * time.Minute) // a2a.lease_ttl (15 s) and sweeps, with room
	bad := 0
	ended := map[string]int{}
	for id := range l.queued {
		for {
			v, ok := one.call(context.Background(), 0, "GetTask", map[string]any{"id": id})
			state, _ := mapPath(v, "status", "state").(string)
			if ok && (state == "TASK_STATE_COMPLETED" || state == "TASK_STATE_FAILED") {
				reason, _ := mapPath(v, "status", "message", "metadata", "reason").(string)
				ended[strings.TrimPrefix(state, "TASK_STATE_")+" "+reason]++
				break
			}
			if time.Now().After(deadline) {
				bad++
				t.Errorf("task %s: %v (ok %v), want it ended", id, state, ok)
				break
			}
			time.Sleep(200 * time.Millisecond) // polling the task's state with a deadline
		}
	}
	l.ended = ended
	return bad
}

// mapPath walks v's nested maps along keys (nil when missing).
func mapPath(v map[string]any, keys ...string) any {
	var cur any = v
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// kindList renders error kinds with counts: "; connection refused 3, …".
func kindList(kinds map[string]int) string {
	if len(kinds) == 0 {
		return ""
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, kinds[k])
	}
	return ": " + strings.Join(parts, ", ")
}
