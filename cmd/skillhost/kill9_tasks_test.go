package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// echoPlugin writes a plugin folder serving the hostile fixture's echo.
func echoPlugin(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "echo")
	wasm, err := os.ReadFile("../../host/internal/sandbox/testdata/hostile.wasm")
	if err != nil {
		t.Fatal(err)
	}
	manifest := "name: echo\nversion: 1.0.0\ndescription: echo\nwasm: hostile.wasm\n" +
		"limits: {timeout: 5s, memory: 16MiB, concurrency: 8}\nskills:\n  - {id: echo, function: echo, description: echo}\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"hostile.wasm": wasm, "plugin.yaml": []byte(manifest)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// sendTask sends one SendMessage and returns the acknowledged task's id and
// state ("" when the host did not acknowledge one).
func sendTask(ctx context.Context, url string, immediately bool, n int) (id, state string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"configuration":{"returnImmediately":%t},`+
		`"message":{"role":"ROLE_USER","messageId":"m%d","parts":[{"data":{"n":%d}}],"metadata":{"skillId":"echo"}}}}`, immediately, n, n)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/rpc", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", ""
	}
	defer resp.Body.Close()
	var r struct {
		Result struct {
			Task struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"task"`
		} `json:"result"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil {
		return "", ""
	}
	return r.Result.Task.ID, r.Result.Task.Status.State
}

// TestKill9KeepsAcknowledgedTasks: clients send A2A messages, blocking and
// not, while the host is killed with SIGKILL; after a restart on the same
// data every task the host acknowledged is there: a blocking one in the
// state its reply gave, a returnImmediately one at least submitted.
func TestKill9KeepsAcknowledgedTasks(t *testing.T) {
	t.Parallel()
	data, plugins := t.TempDir(), echoPlugin(t)
	h := startHost(t, data, plugins)
	type ack struct{ id, state string }
	var (
		mu    sync.Mutex
		acked []ack
		wg    sync.WaitGroup
	)
	ctx, stop := context.WithCancel(context.Background())
	for w := range 8 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				id, state := sendTask(ctx, h.url, w%4 == 3, w*100000+n)
				if id != "" {
					mu.Lock()
					acked = append(acked, ack{id, state})
					mu.Unlock()
				}
			}
		})
	}
	pollEvery(60*time.Second, 20*time.Millisecond, func() bool { // kill once a few hundred tasks are acknowledged (or after a while)
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200
	})
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.done
	stop()
	wg.Wait()
	if len(acked) < 20 {
		t.Fatalf("only %d tasks acknowledged before the kill", len(acked))
	}
	h2 := startHost(t, data, plugins)
	for _, a := range acked {
		var task struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		}
		mustResult(t, call(t, h2.url, "GetTask", map[string]any{"id": a.id}), &task)
		switch {
		case a.state == "TASK_STATE_COMPLETED" && task.Status.State != a.state:
			t.Errorf("task %s was acknowledged completed; after the restart it is %s", a.id, task.Status.State)
		case task.ID != a.id || task.Status.State == "":
			t.Errorf("task %s was acknowledged %s; after the restart: %+v", a.id, a.state, task)
		}
	}
	t.Logf("%d acknowledged tasks checked after the SIGKILL", len(acked))
}
