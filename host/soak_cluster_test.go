package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/faultnet"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// TestSoakCluster is `make soak-cluster`, not part of `make test`: three
// NATS nodes (in this process) and three real `skillhost serve` processes
// on loopback, each reaching NATS through a fault-injecting proxy, under
// continuous bounded load; faults on the wire (latency, a bandwidth cap, a
// cut connection, a half-open one: soak_faults_test.go), one host killed
// (SIGKILL), one NATS node stopped. It reports the window after each event
// and the errors clients saw in it, and checks that every acknowledged
// session, context value, task and plan is intact and no task is left
// running. SOAK_CLUSTER=1 runs it;
// SOAK_BIN names the binary; SOAK_DURATION (default 60s) and
// SOAK_WORKERS (default 4) size it; SOAK_REPORT, when
// set, receives the report as Markdown.
func TestSoakCluster(t *testing.T) {
	if os.Getenv("SOAK_CLUSTER") == "" {
		t.Skip("soak test: run with make soak-cluster")
	}
	bin := os.Getenv("SOAK_BIN")
	if bin == "" {
		t.Fatal("SOAK_BIN must name a built skillhost binary")
	}
	duration := envDuration(t, "SOAK_DURATION", 60*time.Second)
	workers := 4
	if v := os.Getenv("SOAK_WORKERS"); v != "" {
		if _, err := fmt.Sscan(v, &workers); err != nil || workers < 1 || workers > 32 {
			t.Fatalf("SOAK_WORKERS=%q: want 1..32", v)
		}
	}

	c := natstest.StartWith(t, 3, natstest.Options{NoAdvertise: true}) // hosts stay behind their proxies
	plugins := t.TempDir()
	mustPlugin(t, plugins, "tools", toolsManifest)
	ports := natstest.FreePorts(t, 3)
	var hosts []*soakHost
	links := soakLinks(t, c, len(ports))
	for i, p := range ports {
		hosts = append(hosts, startSoakHost(t, bin, i, p, plugins, links[i].URL()))
	}
	lbCtx, stopLB := context.WithCancel(context.Background())
	defer stopLB()
	for _, h := range hosts {
		h.waitHealthy(t, 5*time.Minute)
		h.mu.Lock()
		h.up = true
		h.mu.Unlock()
		go h.healthCheck(lbCtx)
	}
	t.Logf("3 NATS nodes, 3 hosts up; %d workers for %v", workers, duration)

	ld := &soakLoad{hosts: hosts, start: time.Now(), errs: map[string]int{}, lastErr: map[string]time.Time{},
		tasks: map[string]string{}, plans: map[string]string{}, queued: map[string]bool{}}
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); ld.worker(ctx, w) }()
	}
	for _, ev := range soakEvents(t, duration, hosts, links, c) {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(ld.start.Add(ev.at))):
			ld.mark(ev.name)
			ev.do()
		}
	}
	wg.Wait()

	// Verify through a surviving host, with the cluster whole again.
	c.Restart(2)
	c.WaitCurrent(2 * time.Minute)
	for _, l := range links { // every host's wire whole again for the read-back
		l.Set(faultnet.Faults{})
	}
	bad := ld.verify(t, hosts[0]) + ld.verifyEnded(t, hosts[0])
	report := ld.report(bad)
	t.Log("\n" + report)
	if path := os.Getenv("SOAK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	if bad > 0 {
		t.Errorf("%d acknowledged writes lost or wrong", bad)
	}
	if n := ld.nonRetryable(); n > 0 {
		t.Errorf("%d errors clients saw were not retryable", n)
	}
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 10*time.Second || d > time.Hour {
		t.Fatalf("%s=%q: want a duration from 10s to 1h", name, v)
	}
	return d
}

// soakHost is one `skillhost serve` process.
type soakHost struct {
	url string
	cmd *exec.Cmd
	mu  sync.Mutex
	up  bool // as the load balancer sees it
}

func (h *soakHost) isUp() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up
}

// healthCheck is the load balancer's view of h: GET /health every 500ms,
// down after two failures in a row, up after two successes.
func (h *soakHost) healthCheck(ctx context.Context) {
	fails, oks := 0, 0
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(cctx, http.MethodGet, h.url+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		ok := err == nil && resp.StatusCode == http.StatusOK
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		if ok {
			fails, oks = 0, oks+1
		} else {
			fails, oks = fails+1, 0
		}
		h.mu.Lock()
		if fails >= 2 {
			h.up = false
		} else if oks >= 2 {
			h.up = true
		}
		h.mu.Unlock()
	}
}

func startSoakHost(t *testing.T, bin string, i, port int, plugins, natsURL string) *soakHost {
	t.Helper()
	data := t.TempDir()
	logf, err := os.Create(filepath.Join(data, "host.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--plugins", plugins,
		"--data", data, "--nats", natsURL)
	cmd.Stdout, cmd.Stderr = logf, logf
	for _, kv := range os.Environ() { // the hosts run on defaults, whatever this shell sets
		if !strings.HasPrefix(kv, "SKILLHOST_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &soakHost{url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("host %d log (last 2000 bytes):\n%s", i, tail(b, 2000))
		}
	})
	return h
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (h *soakHost) waitHealthy(t *testing.T, within time.Duration) {
	t.Helper()
	eventually(t, "host "+h.url+" healthy", within, func() error {
		resp, err := http.Get(h.url + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

func (h *soakHost) kill(t *testing.T) {
	if err := h.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Error(err)
	}
}

// soakLoad is the clients: what they were told was stored, and what failed.
type soakLoad struct {
	hosts []*soakHost
	start time.Time

	mu       sync.Mutex
	ops      int
	retries  int
	errs     map[string]int       // kind -> count
	lastErr  map[string]time.Time // kind -> last seen
	errTimes []time.Time          // every failed attempt
	errKinds []string             // and its kind
	marks    []soakMark
	sessions []string          // acknowledged sessions (each with context k = its index)
	tasks    map[string]string // task id -> expected output text
	plans    map[string]string // plan id -> session
	queued   map[string]bool   // acknowledged returnImmediately tasks: each must end
	ended    map[string]int    // how they ended: "<STATE> <reason>" -> count
}

type soakMark struct {
	name string
	at   time.Time
}

func (l *soakLoad) mark(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marks = append(l.marks, soakMark{name, time.Now()})
}

// pick is the load balancer: the first host from i on that its health
// checks show up (any host when none is).
func (l *soakLoad) pick(i int) *soakHost {
	for k := range l.hosts {
		if h := l.hosts[(i+k)%len(l.hosts)]; h.isUp() {
			return h
		}
	}
	return l.hosts[i%len(l.hosts)]
}

// call sends one JSON-RPC request through the load balancer, retrying (on
// the next host) a transport error or a retryable error, up to 20 tries. A
// retry answered "already exists / already running" means the first try had
// landed: that is success.
func (l *soakLoad) call(ctx context.Context, first int, method string, params any) (map[string]any, bool) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	for try := range 20 {
		if ctx.Err() != nil && try > 0 {
			return nil, false
		}
		h := l.pick(first + try)
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req, _ := http.NewRequestWithContext(cctx, http.MethodPost, h.url+"/rpc", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		var raw []byte
		if err == nil {
			raw, err = readAll(resp)
		}
		cancel()
		kind := ""
		var out struct {
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		switch {
		case err != nil:
			kind = "transport: " + transportKind(err)
		case json.Unmarshal(raw, &out) != nil:
			kind = "bad response"
		case len(out.Error) > 0 && try > 0 && alreadyDone(errorKind(out.Error)):
			l.mu.Lock()
			l.errs["rpc: "+errorKind(out.Error)+" on a retry (the first try had landed)"]++
			l.ops++
			l.mu.Unlock()
			return map[string]any{}, true
		case len(out.Error) > 0:
			kind = "rpc: " + errorKind(out.Error)
		default:
			l.mu.Lock()
			l.ops++
			l.mu.Unlock()
			return out.Result, true
		}
		l.mu.Lock()
		l.errs[kind]++
		l.lastErr[kind] = time.Now()
		l.errTimes = append(l.errTimes, time.Now())
		l.errKinds = append(l.errKinds, kind)
		l.retries++
		l.mu.Unlock()
		if !retryable(kind) {
			return nil, false
		}
		time.Sleep(50 * time.Millisecond) // client back-off before the next host
	}
	return nil, false
}

func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err := b.ReadFrom(resp.Body)
	return b.Bytes(), err
}

func transportKind(err error) string {
	s := err.Error()
	for _, k := range []string{"connection refused", "connection reset", "EOF", "deadline exceeded"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	return "other"
}

// errorKind is "<code> <reason>" of a JSON-RPC error, its reason read as
// clients read it (fault.Decode: an A2A error's is in its ErrorInfo's
// metadata).
func errorKind(raw json.RawMessage) string {
	var e struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(raw, &e)
	if r := fault.Decode(e.Code, e.Message, e.Data).Reason; r != "" {
		return fmt.Sprintf("%d %s", e.Code, r)
	}
	return fmt.Sprint(e.Code)
}

// retryable: the host was gone or shutting down, or the state store was
// failing over (or a retry found its first try had landed).
func retryable(kind string) bool {
	kind = strings.ToLower(kind)
	return strings.HasPrefix(kind, "transport:") || strings.HasSuffix(kind, "store_unavailable") ||
		strings.HasSuffix(kind, "draining") ||
		strings.Contains(kind, " timeout") || strings.HasSuffix(kind, "canceled") || strings.HasSuffix(kind, "had landed)")
}

// alreadyDone: a create or execute retried after its acknowledgement was
// lost finds it done.
func alreadyDone(kind string) bool {
	for _, r := range []string{"session_exists", "plan_exists", "plan_executing", "plan_completed"} {
		if strings.HasSuffix(kind, r) {
			return true
		}
	}
	return false
}

func (l *soakLoad) nonRetryable() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, v := range l.errs {
		if !retryable(k) {
			n += v
		}
	}
	return n
}

// worker writes a session, a context value, a task and (every fifth round)
// a plan per round until ctx ends; only acknowledged writes are recorded.
func (l *soakLoad) worker(ctx context.Context, w int) {
	for round := 0; ctx.Err() == nil; round++ {
		first := (w + round) % len(l.hosts)
		sid := fmt.Sprintf("soak-%d-%d", w, round)
		if _, ok := l.call(ctx, first, "_cleveragents/session/create", map[string]any{"session_id": sid}); !ok {
			continue
		}
		if _, ok := l.call(ctx, first, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "k", "value": round}); !ok {
			continue
		}
		l.mu.Lock()
		l.sessions = append(l.sessions, sid)
		l.mu.Unlock()
		text := sid + "-task"
		res, ok := l.call(ctx, first, "SendMessage", json.RawMessage(`{"message":{"messageId":"`+sid+`","role":"ROLE_USER","parts":[{"data":{"text":"`+text+`"}}],"metadata":{"skillId":"echo"}}}`))
		if ok {
			if task, _ := res["task"].(map[string]any); task != nil {
				if st, _ := task["status"].(map[string]any); st != nil && st["state"] == "TASK_STATE_COMPLETED" {
					l.mu.Lock()
					l.tasks[task["id"].(string)] = text
					l.mu.Unlock()
				}
			}
		}
		l.queue(ctx, first, sid)
		if round%5 == 0 {
			pid := sid + "-plan"
			if _, ok := l.call(ctx, first, "_cleveragents/plan/create", map[string]any{"session_id": sid, "plan_id": pid,
				"plan_definition": map[string]any{"name": "soak", "steps": []any{
					map[string]any{"id": "s1", "type": "skill", "action": "echo", "params": map[string]any{"text": pid}}}}}); ok {
				if _, ok := l.call(ctx, first, "_cleveragents/plan/execute", map[string]any{"session_id": sid, "plan_id": pid}); ok {
					l.mu.Lock()
					l.plans[pid] = sid
					l.mu.Unlock()
				}
			}
		}
	}
}

// verify reads back every acknowledged write through h and returns how many
// are missing or wrong. Plans are given time to finish (their steps move to
// a surviving host).
func (l *soakLoad) verify(t *testing.T, h *soakHost) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	one := &soakLoad{hosts: []*soakHost{h}, errs: map[string]int{}, lastErr: map[string]time.Time{}}
	ctx := context.Background()
	bad := 0
	for i, sid := range l.sessions {
		v, ok := one.call(ctx, 0, "_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "k"})
		var want int
		fmt.Sscanf(sid[strings.LastIndex(sid, "-")+1:], "%d", &want)
		if !ok || fmt.Sprint(v["value"]) != fmt.Sprint(want) {
			bad++
			t.Errorf("session %d %s: context k = %v (ok %v), want %d", i, sid, v["value"], ok, want)
		}
	}
	for id, text := range l.tasks {
		v, ok := one.call(ctx, 0, "GetTask", map[string]any{"id": id})
		if !ok || !strings.Contains(fmt.Sprint(v["artifacts"]), text) {
			bad++
			t.Errorf("task %s: %v (ok %v), want its artifact %q", id, v, ok, text)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for pid, sid := range l.plans {
		var v map[string]any
		var ok bool
		if !testutil.PollEvery(time.Until(deadline), 200*time.Millisecond, func() bool {
			v, ok = one.call(ctx, 0, "_cleveragents/plan/status", map[string]any{"session_id": sid, "plan_id": pid})
			return ok && (v["status"] == "completed" || v["status"] == "failed")
		}) || v["status"] != "completed" {
			bad++
			t.Errorf("plan %s: %v (ok %v), want completed", pid, v, ok)
		}
	}
	return bad
}

// report renders the run as Markdown.
func (l *soakLoad) report(bad int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| run | %v, 3 NATS nodes + 3 hosts on loopback, each host through its own proxy to NATS |\n", time.Since(l.start).Round(time.Second))
	fmt.Fprintf(&b, "| successful calls | %d |\n", l.ops)
	fmt.Fprintf(&b, "| acknowledged | %d sessions + %d context values, %d tasks (+ %d returnImmediately tasks, each checked to end), %d plans |\n",
		len(l.sessions), len(l.sessions), len(l.tasks), len(l.queued), len(l.plans))
	fmt.Fprintf(&b, "| lost or wrong after the run | %d |\n", bad)
	fmt.Fprintf(&b, "| returnImmediately tasks, how they ended | %s |\n", strings.TrimPrefix(kindList(l.ended), ": "))
	for i, m := range l.marks {
		end := m.at.Add(time.Minute)
		if i+1 < len(l.marks) {
			end = l.marks[i+1].at
		}
		last, n := m.at, 0
		kinds := map[string]int{}
		for i, at := range l.errTimes {
			if !at.Before(m.at) && at.Before(end) {
				n++
				kinds[l.errKinds[i]]++
				if at.After(last) {
					last = at
				}
			}
		}
		fmt.Fprintf(&b, "| window after %s (at %v) | %v from the event to the last failed attempt (%d failed attempts, all retried%s) |\n", m.name,
			m.at.Sub(l.start).Round(time.Second), last.Sub(m.at).Round(time.Millisecond), n, kindList(kinds))
	}
	kinds := make([]string, 0, len(l.errs))
	for k := range l.errs {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		r := "retryable"
		if !retryable(k) {
			r = "NOT retryable"
		}
		fmt.Fprintf(&b, "| errors seen: %s | %d (%s, retried on the next host) |\n", k, l.errs[k], r)
	}
	if len(kinds) == 0 {
		fmt.Fprintf(&b, "| errors seen | none |\n")
	}
	return b.String()
}
