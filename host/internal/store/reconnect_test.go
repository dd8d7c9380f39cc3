package store_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// TestReconnects: after the NATS node restarts, a store on its own
// connection calls its OnReconnect hooks, and both it and a store on the
// caller's connection (Config.Conn, where the store installs no handler)
// count the reconnect — what the task leases compare to catch up on a
// reconnect no hook told them about.
func TestReconnects(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 1)
	own := openCluster(t, c.URL())
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	theirs := mustOpenCluster(t, store.Config{Conn: nc})
	var told atomic.Bool
	stop := own.OnReconnect(func() { told.Store(true) })
	defer stop()
	if own.Reconnects() != 0 || theirs.Reconnects() != 0 {
		t.Fatalf("reconnects before any loss: %d, %d", own.Reconnects(), theirs.Reconnects())
	}
	c.Stop(0)
	c.Restart(0)
	testutil.Eventually(t, 60*time.Second, "both stores to count the reconnect", func() bool {
		return own.Reconnects() > 0 && theirs.Reconnects() > 0
	})
	testutil.Eventually(t, 10*time.Second, "the own connection's hook to be called", told.Load)
}
