package httpx

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/testutil"
)

// tcpPair is both ends of a loopback TCP connection: what the server
// accepted and what the client holds.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
	return server, client
}

// TestLateWatch: a request still running once its watch is due has its
// context canceled (errClientGone) when its client leaves; one that ended
// before is never watched (its client leaving afterwards cancels nothing),
// and the watcher's goroutine stops once no request runs.
func TestLateWatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		endFirst bool // the request ends before its client leaves
	}{
		{"running request, client leaves", false},
		{"ended request, client leaves", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			server, client := tcpPair(t)
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			var w watcher
			lw := w.add(server, cancel)
			if tt.endFirst {
				lw.end()
			}
			_ = client.Close()
			if tt.endFirst {
				testutil.Eventually(t, 30*time.Second, "the watcher to stop ticking", func() bool {
					w.mu.Lock()
					defer w.mu.Unlock()
					return !w.ticking
				})
				if err := context.Cause(ctx); err != nil {
					t.Errorf("an ended request's context was canceled: %v", err)
				}
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the context was not canceled 30 s after the client left")
			}
			if err := context.Cause(ctx); !errors.Is(err, errClientGone) {
				t.Errorf("cause %v, want errClientGone", err)
			}
			lw.end()
			testutil.Eventually(t, 30*time.Second, "the watcher to stop ticking", func() bool {
				w.mu.Lock()
				defer w.mu.Unlock()
				return !w.ticking
			})
		})
	}
}
