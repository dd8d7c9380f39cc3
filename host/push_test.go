package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// pushed is one notification a receiver got.
type pushed struct {
	token, authorization string
	event                a2av1.Event
}

// mustReceiver is a push receiver on 127.0.0.1 that hands every
// notification to the returned channel.
func mustReceiver(t *testing.T) (string, <-chan pushed) {
	t.Helper()
	got := make(chan pushed, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var sr a2av1.StreamResponse
		if err := json.Unmarshal(body, &sr); err != nil {
			t.Errorf("push body %s: %v", body, err)
		}
		got <- pushed{token: r.Header.Get("A2A-Notification-Token"), authorization: r.Header.Get("Authorization"), event: sr.Event}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// waitState waits for a status update of task in state on got.
func waitState(t *testing.T, got <-chan pushed, task a2av1.TaskID, state a2av1.TaskState) pushed {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case p := <-got:
			if su, ok := p.event.(*a2av1.TaskStatusUpdateEvent); ok && su.TaskID == task && su.Status.State == state {
				return p
			}
		case <-deadline:
			t.Fatalf("no push of task %s reaching %s", task, state)
		}
	}
}

// Push notifications through the official a2a-go v2 client, over both
// bindings: a config given with the message and configs set on a running
// task receive its updates with their token and authentication; get, list
// and delete; the receiver is on 127.0.0.1, which net.allow_private opens.
func TestPushNotifications(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.Net.AllowPrivate = []string{"127.0.0.0/8"} })
	for _, binding := range []a2av1.TransportProtocol{a2av1.TransportProtocolJSONRPC, a2av1.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			url, got := mustReceiver(t)
			cl := mustClient(ctx, t, th.URL, binding)

			req := message("echo", map[string]any{"text": "pushed"})
			req.Config = &a2av1.SendMessageConfig{PushConfig: &a2av1.PushConfig{URL: url, Token: "tok-" + string(binding)}}
			res, err := cl.SendMessage(ctx, req)
			if err != nil {
				t.Fatalf("SendMessage with a push config: %v", err)
			}
			task := res.(*a2av1.Task)
			if p := waitState(t, got, task.ID, a2av1.TaskStateCompleted); p.token != "tok-"+string(binding) {
				t.Errorf("token header %q", p.token)
			}

			spin := message("spin", map[string]any{})
			spin.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
			res, err = cl.SendMessage(ctx, spin)
			if err != nil {
				t.Fatal(err)
			}
			running := res.(*a2av1.Task)
			want := &a2av1.PushConfig{TaskID: running.ID, ID: "c1", URL: url, Auth: &a2av1.PushAuthInfo{Scheme: "Bearer", Credentials: "s3cret"}}
			if _, err := cl.CreateTaskPushConfig(ctx, want); err != nil {
				t.Fatalf("CreateTaskPushConfig: %v", err)
			}
			cfg, err := cl.GetTaskPushConfig(ctx, &a2av1.GetTaskPushConfigRequest{TaskID: running.ID, ID: "c1"})
			if err != nil {
				t.Fatalf("GetTaskPushConfig: %v", err)
			}
			if diff := cmp.Diff(want, cfg); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if _, err := cl.GetTaskPushConfig(ctx, &a2av1.GetTaskPushConfigRequest{TaskID: running.ID, ID: "nope"}); err == nil {
				t.Error("GetTaskPushConfig of a missing id: no error")
			}
			if _, err := cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: running.ID}); err != nil {
				t.Fatal(err)
			}
			if p := waitState(t, got, running.ID, a2av1.TaskStateCanceled); p.authorization != "Bearer s3cret" {
				t.Errorf("authorization header %q", p.authorization)
			}
			list, err := cl.ListTaskPushConfigs(ctx, &a2av1.ListTaskPushConfigRequest{TaskID: running.ID})
			if err != nil || len(list) != 1 {
				t.Errorf("ListTaskPushConfigs = %v, %v", list, err)
			}
			if err := cl.DeleteTaskPushConfig(ctx, &a2av1.DeleteTaskPushConfigRequest{TaskID: running.ID, ID: "c1"}); err != nil {
				t.Fatalf("DeleteTaskPushConfig: %v", err)
			}
			if list, err := cl.ListTaskPushConfigs(ctx, &a2av1.ListTaskPushConfigRequest{TaskID: running.ID}); err != nil || len(list) != 0 {
				t.Errorf("after delete: %v, %v", list, err)
			}
			if _, err := cl.CreateTaskPushConfig(ctx, &a2av1.PushConfig{TaskID: "no-such-task", URL: url}); !errors.Is(err, a2av1.ErrTaskNotFound) {
				t.Errorf("config on an unknown task: %v, want ErrTaskNotFound", err)
			}
		})
	}
}

// Without net.allow_private, a push target on loopback, a private range
// or a metadata address is refused, like http_fetch's; configs are capped
// per task.
func TestPushGuard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.A2A.Push.MaxPerTask, c.A2A.Push.MaxPerKey = 2, 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(ctx, t, th.URL, a2av1.TransportProtocolHTTPJSON)
	res, err := cl.SendMessage(ctx, message("echo", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2av1.Task)
	for _, u := range []string{"http://127.0.0.1:9/x", "http://10.0.0.1/x", "http://169.254.169.254/latest", "http://[::1]/x", "ftp://example.com/x", "http://user:pw@example.com/"} {
		if _, err := cl.CreateTaskPushConfig(ctx, &a2av1.PushConfig{TaskID: task.ID, URL: u}); !errors.Is(err, a2av1.ErrInvalidParams) {
			t.Errorf("push to %s: %v, want ErrInvalidParams", u, err)
		}
	}
	for i := range 2 {
		if _, err := cl.CreateTaskPushConfig(ctx, &a2av1.PushConfig{TaskID: task.ID, URL: "https://example.com/hook", ID: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.CreateTaskPushConfig(ctx, &a2av1.PushConfig{TaskID: task.ID, URL: "https://example.com/hook", ID: "c"}); err == nil {
		t.Error("a third config on a task capped at 2: accepted")
	}
	// Replacing a config of the same id is not a new one.
	if _, err := cl.CreateTaskPushConfig(ctx, &a2av1.PushConfig{TaskID: task.ID, URL: "https://example.com/other", ID: "a"}); err != nil {
		t.Errorf("replacing config a: %v", err)
	}
	if _, err := cl.CreateTaskPushConfig(ctx, &a2av1.PushConfig{TaskID: task.ID, URL: "https://example.com/x", ID: "a",
		Token: strings.Repeat("t", 2000)}); !errors.Is(err, a2av1.ErrInvalidParams) {
		t.Errorf("a 2000-byte token: %v, want ErrInvalidParams", err)
	}
	// The key's cap (3) counts configs over all its tasks.
	res, err = cl.SendMessage(ctx, message("echo", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	second := res.(*a2av1.Task)
	if _, err := cl.CreateTaskPushConfig(ctx, &a2av1.PushConfig{TaskID: second.ID, URL: "https://example.com/hook"}); err != nil {
		t.Fatalf("third config of the key: %v", err)
	}
	if _, err := cl.CreateTaskPushConfig(ctx, &a2av1.PushConfig{TaskID: second.ID, URL: "https://example.com/hook"}); err == nil ||
		!strings.Contains(err.Error(), "max_per_key") {
		t.Errorf("fourth config of a key capped at 3: %v, want push_limit (max_per_key)", err)
	}
	// A config sent with the message is capped the same way: the message is
	// refused rather than run without the notifications the client asked for.
	req := message("echo", map[string]any{})
	req.Config = &a2av1.SendMessageConfig{PushConfig: &a2av1.PushConfig{URL: "https://example.com/hook"}}
	if res, err := cl.SendMessage(ctx, req); err == nil || !strings.Contains(err.Error(), "max_per_key") {
		t.Errorf("a message with a fourth config of the key: %v, %v; want push_limit (max_per_key)", res, err)
	}
}
