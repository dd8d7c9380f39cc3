package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

// freePort reserves a loopback port for a cluster route listener.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startCluster starts a 3-node JetStream cluster on 127.0.0.1 and returns
// its client URLs.
func startCluster(t *testing.T) []string {
	t.Helper()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	base := t.TempDir()
	var urls []string
	for i, p := range ports {
		srv, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   filepath.Join(base, fmt.Sprintf("n%d", i)),
			Cluster:    server.ClusterOpts{Name: "skillhost-test", Host: "127.0.0.1", Port: p},
			Routes:     routes,
			NoLog:      true,
			NoSigs:     true,
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		if !srv.ReadyForConnections(10 * time.Second) {
			t.Fatalf("node %d not ready", i)
		}
		urls = append(urls, srv.ClientURL())
	}
	return urls
}

// openCluster opens a store on url, retrying while the cluster elects its
// JetStream meta leader.
func openCluster(t *testing.T, url string) *store.Store {
	t.Helper()
	deadline := time.Now().Add(25 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		st, err := store.Open(ctx, store.Config{URL: url, Replicas: 3})
		cancel()
		if err == nil {
			t.Cleanup(func() { _ = st.Close() })
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("Open(%s): %v", url, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestThreeNodeCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	urls := startCluster(t)
	writer := openCluster(t, strings.Join(urls, ","))
	reader := openCluster(t, urls[2])
	ctx := testCtx(t)

	// Every acknowledged write is visible at once through another node:
	// reads go to the stream leader, never to a lagging follower.
	for i := range 5 {
		id := fmt.Sprintf("clustered-%d", i)
		mustSession(t, writer, id)
		if _, err := reader.ActiveSession(ctx, id); err != nil {
			t.Errorf("other node, right after create: ActiveSession(%s): %v", id, err)
		}
		if _, err := writer.SetContext(ctx, id, "n", json.RawMessage(fmt.Sprint(i)), time.Hour); err != nil {
			t.Fatalf("SetContext: %v", err)
		}
		got, err := reader.GetContext(ctx, id, "n")
		if err != nil || string(got.Value) != fmt.Sprint(i) {
			t.Errorf("other node: GetContext(%s) = %s, %v", id, got.Value, err)
		}
		if i%2 == 0 {
			if _, err := writer.CloseSession(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := reader.ActiveSession(ctx, id); faultOf(t, err).Reason != fault.ReasonSessionClosed {
				t.Errorf("other node, right after close: ActiveSession(%s) = %v, want session_closed", id, err)
			}
		}
	}
	// A bucket made through KeyValue with Replicas 0 gets the store's 3.
	if _, err := reader.KeyValue(ctx, jetStreamCfg("skillhost_tasks_test")); err != nil {
		t.Fatal(err)
	}
	// The buckets really are replicated three ways.
	for _, bucket := range []string{store.SessionsBucket, store.ContextBucket, "skillhost_tasks_test"} {
		stream, err := reader.JetStream().Stream(ctx, "KV_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		cfg := stream.CachedInfo().Config
		if cfg.Replicas != 3 {
			t.Errorf("bucket %s replicas = %d, want 3", bucket, cfg.Replicas)
		}
		if bucket != "skillhost_tasks_test" && cfg.AllowDirect {
			t.Errorf("bucket %s allows direct (follower) reads; want leader reads on a cluster", bucket)
		}
	}
}
