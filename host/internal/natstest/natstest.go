// Package natstest starts real NATS JetStream clusters on 127.0.0.1 for
// tests: every node in this process, each with its own store directory, so
// a test can stop a node (as a crash would) and start it again on the same
// data.
//
//	c := natstest.Start(t, 3)
//	st, err := store.Open(ctx, store.Config{URL: c.URL()})
//	c.Stop(1)    // node 1 gone; the others keep quorum
//	c.Restart(1) // back, on its old data
//
// It is test support only: nothing outside _test.go files may import it.
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyTimeout bounds how long a node may take to accept connections.
const readyTimeout = 20 * time.Second

// Cluster is a set of NATS servers routed to each other. Its methods are
// safe for concurrent use.
type Cluster struct {
	t     testing.TB
	name  string
	mu    sync.Mutex
	opts  []*server.Options
	nodes []*server.Server // nil while stopped
}

// Options adjust a cluster.
type Options struct {
	// NoAdvertise keeps the nodes from telling clients each other's URLs:
	// a client uses the URLs it was given, so one behind a proxy
	// (faultnet) reconnects through the proxy, never around it.
	NoAdvertise bool
}

// Start starts an n-node JetStream cluster on loopback and stops it at the
// end of the test. The nodes' client ports stay the same across Restart.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartWith(t, n, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	c := PrepareWith(t, n, o)
	for i := range n {
		c.Restart(i)
	}
	return c
}

// Prepare reserves ports and directories for an n-node cluster without
// starting any node: URL is known before the cluster is up. Start nodes with
// Restart.
func Prepare(t testing.TB, n int) *Cluster {
	t.Helper()
	return PrepareWith(t, n, Options{})
}

// PrepareWith is Prepare with options.
func PrepareWith(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, name: "skillhost-test", nodes: make([]*server.Server, n)}
	clientPorts, routePorts := FreePorts(t, n), FreePorts(t, n)
	var routes []*url.URL
	for _, p := range routePorts {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	base := t.TempDir()
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       clientPorts[i],
			JetStream:  true,
			StoreDir:   filepath.Join(base, fmt.Sprintf("n%d", i)),
			NoLog:      true,
			NoSigs:     true,
		}
		if n > 1 {
			o.Cluster = server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: routePorts[i], NoAdvertise: opts.NoAdvertise}
			o.Routes = routes
		}
		c.opts = append(c.opts, o)
	}
	t.Cleanup(c.StopAll)
	return c
}

// FreePorts reserves n distinct loopback ports (they are released before
// return, so a test binds them right away).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// URL is every node's client URL, comma-separated (the form store.Config.URL
// and --nats take).
func (c *Cluster) URL() string { return strings.Join(c.URLs(), ",") }

// URLs are the nodes' client URLs.
func (c *Cluster) URLs() []string {
	var out []string
	for _, o := range c.opts {
		out = append(out, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return out
}

// NodeURL is node i's client URL.
func (c *Cluster) NodeURL(i int) string { return c.URLs()[i] }

// Server is node i's server, nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Stop shuts node i down at once (connections dropped, nothing handed
// over), as a crashed process would leave it; its data stays on disk.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	srv := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart starts node i (again) on its old ports and data and waits until
// it accepts connections.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[i] != nil {
		return
	}
	o := *c.opts[i]
	srv, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatalf("natstest: node %d: %v", i, err)
	}
	srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		srv.Shutdown()
		c.t.Fatalf("natstest: node %d not ready after %v", i, readyTimeout)
	}
	c.nodes[i] = srv
}

// StopAll stops every running node (Start registers it as a cleanup).
func (c *Cluster) StopAll() {
	for i := range c.opts {
		c.Stop(i)
	}
}

// WaitCurrent waits until every running node reports JetStream healthy
// (meta leader known, every stream and consumer replica caught up), so a
// test may stop another node without losing quorum. It fails the test after
// timeout.
func (c *Cluster) WaitCurrent(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var bad []string
		for i := range c.opts {
			srv := c.Server(i)
			if srv == nil {
				continue
			}
			if h := srv.Healthz(nil); h.Status != "ok" {
				bad = append(bad, fmt.Sprintf("n%d: %s", i, h.Error))
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: cluster not current after %v: %s", timeout, strings.Join(bad, "; "))
		}
		time.Sleep(50 * time.Millisecond) // polling the servers' own health, not a synchronisation sleep
	}
}
