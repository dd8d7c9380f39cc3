package a2a_test

import (
	"cmp"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/assemble"
	"github.com/skillhost/skillhost/host/internal/faultnet"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// leasePlugins is a plugin folder for the lease tests: hostile's spin (a
// call that runs until stopped, 2 minutes at most) and the progress
// plugin's slow, also as slow_again, which says it is idempotent.
func leasePlugins(t *testing.T) string {
	t.Helper()
	root := mustProgressPluginDir(t)
	manifest := filepath.Join(root, "progress", "plugin.yaml")
	b := mustRead(t, manifest)
	b = append(b, []byte("  - id: slow_again\n    description: slow, safe to run again\n    function: slow\n    idempotent: true\n")...)
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "hostile")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostile := strings.Replace(string(mustRead(t, filepath.Join("testdata", "plugins", "hostile", "plugin.yaml"))), "timeout: 20s", "timeout: 120s", 1)
	files := map[string][]byte{"plugin.yaml": []byte(hostile), "hostile.wasm": mustRead(t, filepath.Join("testdata", "plugins", "hostile", "hostile.wasm"))}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// leaseOpts configure startLeaseHost.
type leaseOpts struct {
	nats       string // the cluster (or a proxy group's) URL
	ttl, sweep time.Duration
}

// startLeaseHost is a host on a NATS cluster with lease settings; its
// calls may run 2 minutes (policy.max_timeout).
func startLeaseHost(t *testing.T, plugins, cache string, o leaseOpts) *testHost {
	t.Helper()
	ctx := context.Background()
	hc := config.Defaults()
	hc.NATS, hc.Data = o.nats, t.TempDir()
	hc.Policy.MaxTimeout = 2 * time.Minute
	hc.A2A.LeaseTTL, hc.A2A.LeaseSweep = cmp.Or(o.ttl, time.Hour), cmp.Or(o.sweep, 200*time.Millisecond)
	parts, err := assemble.Build(ctx, assemble.Spec{Config: hc, Purpose: assemble.Test, CacheDir: cache, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := parts.Registry.LoadDir(ctx, plugins); err != nil {
		t.Fatal(err)
	}
	testutil.MustCompiled(t, parts.Registry) // a first call must not outwait its deadline behind the compiles
	tasks, err := a2a.OpenTaskStore(ctx, parts.Store, a2a.TaskStoreConfig{A2A: hc.A2A})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	cards := agentcard.NewService(agentcard.Config{BaseURL: base, Version: "9.9.9"}, parts.Registry.Snapshot, agentcard.Options{Logger: quietLogger()})
	svc, err := a2a.NewService(a2a.ServiceConfig{Executor: parts.Registry, Snapshot: parts.Registry.Snapshot, Tasks: tasks, Cards: cards,
		Logger: quietLogger(), A2A: hc.A2A})
	if err != nil {
		t.Fatal(err)
	}
	eng := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20}, jsonrpc.WithLogger(quietLogger()))
	a2a.Register(eng, svc)
	srv.Config.Handler = newTestMux(eng, cards)
	srv.Start()
	lctx, stopLeases := context.WithCancel(ctx)
	leasesDone := make(chan struct{})
	go func() { defer close(leasesDone); svc.RunLeases(lctx) }()
	t.Cleanup(func() {
		stopLeases()
		<-leasesDone
		srv.CloseClientConnections()
		srv.Close()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = svc.Close(cctx)
		_ = parts.Close(cctx)
	})
	return &testHost{URL: base, svc: svc, tasks: tasks, store: parts.Store}
}

// leaseCluster is a 3-node NATS cluster and a proxy group in front of it
// (the faulty host's way to NATS).
func leaseCluster(t *testing.T) (*natstest.Cluster, *faultnet.Group) {
	t.Helper()
	c := natstest.StartWith(t, 3, natstest.Options{NoAdvertise: true})
	g, err := faultnet.ListenAll(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return c, g
}

// waitDisconnected waits until h's store has lost NATS.
func waitDisconnected(t *testing.T, h *testHost) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, "the host to lose its NATS connection", func() bool { return h.store.Ready() != nil })
}

// waitWorking waits until the task is working as h sees it.
func waitWorking(t *testing.T, ctx context.Context, h *testHost, id a2av1.TaskID) {
	t.Helper()
	cl := mustClient(t, ctx, h.URL)
	testutil.Eventually(t, 30*time.Second, "task "+string(id)+" working", func() bool {
		task, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: id})
		return err == nil && task.Status.State == a2av1.TaskStateWorking
	})
}

// startTask sends msg with returnImmediately and returns the stored task.
func startTask(t *testing.T, ctx context.Context, h *testHost, req *a2av1.SendMessageRequest) *a2av1.Task {
	t.Helper()
	req.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
	res, err := mustClient(t, ctx, h.URL).SendMessage(ctx, req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2av1.Task)
	if !ok {
		t.Fatalf("SendMessage returned %T", res)
	}
	return task
}

// statusReason is the reason in a task status message's metadata.
func statusReason(s a2av1.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	r, _ := s.Message.Metadata["reason"].(string)
	return r
}
