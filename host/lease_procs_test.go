package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The lease tests run real `skillhost serve` processes (built once from
// cmd/skillhost) on loopback, so a host can be killed with SIGKILL.

var skillhostBin struct {
	once sync.Once
	path string
	err  error
}

// mustSkillhost builds the skillhost binary once per test binary run.
func mustSkillhost(t *testing.T) string {
	t.Helper()
	skillhostBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "skillhost-lease-bin-")
		if err != nil {
			skillhostBin.err = err
			return
		}
		skillhostBin.path = filepath.Join(dir, "skillhost")
		out, err := exec.Command("go", "build", "-o", skillhostBin.path, "github.com/skillhost/skillhost/cmd/skillhost").CombinedOutput()
		if err != nil {
			skillhostBin.err = fmt.Errorf("building skillhost: %w\n%s", err, out)
		}
	})
	if skillhostBin.err != nil {
		t.Fatal(skillhostBin.err)
	}
	return skillhostBin.path
}

// leasePluginsDir has two plugins: tools (hostile.wasm's spin: runs until
// stopped, 2 minutes at most) and naps (nap.wasm: sleeps 10 ms per input
// byte, then returns the input) with nap (idempotent) and nap_once (not).
func leasePluginsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", "name: tools\nversion: 1.0.0\ndescription: spin\nwasm: hostile.wasm\n"+
		"limits: {timeout: 2m, memory: 16MiB, concurrency: 8}\n"+
		"skills:\n  - {id: spin, function: loop, description: runs until stopped}\n")
	wasm, err := os.ReadFile(filepath.Join("testdata", "nap.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	naps := filepath.Join(dir, "naps")
	if err := os.MkdirAll(naps, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "name: naps\nversion: 1.0.0\ndescription: naps\nwasm: nap.wasm\n" +
		"limits: {timeout: 2m, memory: 16MiB, concurrency: 8}\nskills:\n" +
		"  - {id: nap, function: nap, description: sleeps then echoes, idempotent: true}\n" +
		"  - {id: nap_once, function: nap, description: sleeps then echoes}\n"
	for name, b := range map[string][]byte{"nap.wasm": wasm, "plugin.yaml": []byte(manifest)} {
		if err := os.WriteFile(filepath.Join(naps, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// leaseConfig writes a config file: pushes may reach loopback, calls may
// run 2 minutes, and the given lease and shutdown settings.
func leaseConfig(t *testing.T, ttl, sweep, grace time.Duration) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "skillhost.yaml")
	cfg := fmt.Sprintf("net:\n  allow_private: [127.0.0.1]\npolicy:\n  max_timeout: 2m\n"+
		"a2a:\n  lease_ttl: %v\n  lease_sweep: %v\nhttp:\n  shutdown_timeout: %v\n", ttl, sweep, grace)
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// leaseProc is one `skillhost serve`.
type leaseProc struct {
	url  string
	cmd  *exec.Cmd
	logs *bytes.Buffer
	mu   *sync.Mutex
	done chan error
}

var servedURL = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)`)

// startLeaseProc starts `skillhost serve` on data with plugins and config
// (natsURL "" = embedded) and waits until /health answers 200.
func startLeaseProc(t *testing.T, data, plugins, config, natsURL string) *leaseProc {
	t.Helper()
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--plugins", plugins, "--config", config}
	if natsURL != "" {
		args = append(args, "--nats", natsURL)
	}
	cmd := exec.Command(mustSkillhost(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKILLHOST_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p := &leaseProc{cmd: cmd, logs: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait(); _ = pw.Close() }()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := servedURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("host %s log:\n%s", p.url, tail(p.logs.Bytes(), 3000))
			p.mu.Unlock()
		}
	})
	select {
	case p.url = <-found:
	case err := <-p.done:
		t.Fatalf("skillhost serve exited early: %v\n%s", err, p.logs.String())
	case <-time.After(2 * time.Minute):
		t.Fatal("skillhost serve did not report its address")
	}
	eventually(t, "host "+p.url+" healthy", time.Minute, func() error {
		resp, err := http.Get(p.url + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	return p
}

// kill9 kills the host with SIGKILL and waits for it to be gone.
func (p *leaseProc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// leaseErr is a JSON-RPC error as received (data as it is: an ErrorInfo
// array for A2A methods).
type leaseErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rpc makes one JSON-RPC call; the result, or the error object.
func (p *leaseProc) rpc(t *testing.T, method string, params any) (json.RawMessage, *leaseErr) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/rpc", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, &leaseErr{Message: "transport: " + err.Error()}
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *leaseErr       `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, &leaseErr{Message: "decode: " + err.Error()}
	}
	return out.Result, out.Error
}

// leaseTask is what a client sees of a task.
type leaseTask struct {
	ID     string `json:"id"`
	Status struct {
		State   string `json:"state"`
		Message *struct {
			Metadata map[string]any `json:"metadata"`
		} `json:"message"`
	} `json:"status"`
	Artifacts []json.RawMessage `json:"artifacts"`
}

func (lt leaseTask) reason() string {
	if lt.Status.Message == nil {
		return ""
	}
	r, _ := lt.Status.Message.Metadata["reason"].(string)
	return r
}

// send starts a task of skill with data as input (returnImmediately), with
// a push config to push when set; it returns the task id.
func (p *leaseProc) send(t *testing.T, skill string, data any, push string) string {
	t.Helper()
	cfg := map[string]any{"returnImmediately": true}
	if push != "" {
		cfg["taskPushNotificationConfig"] = map[string]any{"url": push}
	}
	res, rerr := p.rpc(t, "SendMessage", map[string]any{"configuration": cfg, "message": map[string]any{
		"messageId": "m-" + skill, "role": "ROLE_USER", "parts": []any{map[string]any{"data": data}}, "metadata": map[string]any{"skillId": skill}}})
	if rerr != nil {
		t.Fatalf("SendMessage %s: %+v", skill, rerr)
	}
	var out struct {
		Task leaseTask `json:"task"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.Task.ID == "" {
		t.Fatalf("SendMessage %s: %s (%v)", skill, res, err)
	}
	return out.Task.ID
}

// task reads a task (its zero value when the call fails: hosts restart).
func (p *leaseProc) task(t *testing.T, id string) leaseTask {
	t.Helper()
	res, rerr := p.rpc(t, "GetTask", map[string]any{"id": id})
	var lt leaseTask
	if rerr == nil {
		_ = json.Unmarshal(res, &lt)
	}
	return lt
}

// waitTask waits until the task is in state (as p sees it) and returns it.
func (p *leaseProc) waitTask(t *testing.T, id, state string, within time.Duration) leaseTask {
	t.Helper()
	var lt leaseTask
	eventually(t, "task "+id+" "+state, within, func() error {
		if lt = p.task(t, id); lt.Status.State != state {
			return fmt.Errorf("state %q", lt.Status.State)
		}
		return nil
	})
	return lt
}

// subscribe follows a task through p (SubscribeToTask, SSE) until its
// stream ends; the returned channel receives every event's JSON.
func (p *leaseProc) subscribe(t *testing.T, ctx context.Context, id string) <-chan []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": map[string]any{"id": id}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/rpc", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan []string, 1)
	go func() {
		defer resp.Body.Close()
		var events []string
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events = append(events, data)
			}
		}
		out <- events
	}()
	return out
}

// pushReceiver records every push notification POSTed to it.
type pushReceiver struct {
	URL    string
	mu     sync.Mutex
	bodies []string
}

func newPushReceiver(t *testing.T) *pushReceiver {
	t.Helper()
	r := &pushReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		r.bodies = append(r.bodies, string(b))
		r.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/push"
	return r
}

// waitFor waits until a notification about task id contains every want.
func (r *pushReceiver) waitFor(t *testing.T, id string, within time.Duration, want ...string) {
	t.Helper()
	eventually(t, "a push notification of task "+id+" with "+strings.Join(want, ", "), within, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, b := range r.bodies {
			if strings.Contains(b, id) && containsAll(b, want) {
				return nil
			}
		}
		return fmt.Errorf("%d notifications, none matches", len(r.bodies))
	})
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// napInput is nap's input for a nap of about d (10 ms per byte).
func napInput(d time.Duration) map[string]any {
	n := int(d/(10*time.Millisecond)) - len(`{"pad":""}`)
	return map[string]any{"pad": strings.Repeat("z", max(n, 0))}
}
