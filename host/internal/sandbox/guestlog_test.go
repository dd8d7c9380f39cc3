package sandbox_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// recordHandler is a slog.Handler keeping every record it is given.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}

// lines returns the records with source=extism as "LEVEL msg k=v…".
func (h *recordHandler) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		s := r.Level.String() + " " + r.Message
		extism := false
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.String()
			extism = extism || (a.Key == "source" && a.Value.String() == "extism")
			return true
		})
		if extism {
			out = append(out, s)
		}
	}
	return out
}

func mustLoggingRuntime(t *testing.T) (*sandbox.Runtime, *recordHandler) {
	t.Helper()
	h := &recordHandler{}
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: t.TempDir(), Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	return rt, h
}

// TestExtismLogReachesTheHostLog: Extism's own log functions (what go-pdk's
// pdk.Log and every other PDK's log call) reach the host log at their level,
// attributed to the plugin and function, without go-sdk's own chatter.
func TestExtismLogReachesTheHostLog(t *testing.T) {
	t.Parallel()
	rt, h := mustLoggingRuntime(t)
	m := mustLoad(t, rt, "extism_log", sandbox.Limits{})
	if _, err := m.Call(context.Background(), "levels", []byte("hello from the guest")); err != nil {
		t.Fatal(err)
	}
	const attrs = " plugin=extism_log function=levels source=extism"
	want := []string{
		"DEBUG hello from the guest" + attrs,
		"INFO hello from the guest" + attrs,
		"WARN hello from the guest" + attrs,
		"ERROR hello from the guest" + attrs,
	}
	if diff := cmp.Diff(want, h.lines()); diff != "" {
		t.Errorf("host log (-want +got):\n%s", diff)
	}
}

// TestExtismLogIsRateLimited: a guest logging 1000 lines in one call gets
// the burst through, not the flood; the next line that gets through says
// how many were dropped.
func TestExtismLogIsRateLimited(t *testing.T) {
	t.Parallel()
	rt, h := mustLoggingRuntime(t)
	m := mustLoad(t, rt, "extism_log", sandbox.Limits{})
	start := time.Now()
	if _, err := m.Call(context.Background(), "flood", nil); err != nil {
		t.Fatal(err)
	}
	allowed := sandbox.GuestLogBurst + int(time.Since(start).Seconds()*sandbox.GuestLogRate) + 1
	if n := len(h.lines()); n < sandbox.GuestLogBurst || n > allowed {
		t.Fatalf("%d of 1000 lines logged, want between %d and %d", n, sandbox.GuestLogBurst, allowed)
	}
	if !testutil.PollEvery(10*time.Second, 50*time.Millisecond, func() bool { // one token refills every 50ms
		if _, err := m.Call(context.Background(), "levels", []byte("after")); err != nil {
			t.Fatal(err)
		}
		for _, l := range h.lines() {
			if strings.HasPrefix(l, "DEBUG after") || strings.Contains(l, " after ") {
				if !strings.Contains(l, "dropped_before=") {
					t.Fatalf("first line after the flood %q does not report the dropped lines", l)
				}
				return true
			}
		}
		return false
	}) {
		t.Fatal("no line got through after the flood within 10s")
	}
}

// TestExtismGoPDKTestPlugin loads go-sdk's own log.wasm (a go-pdk plugin
// from the extism/go-sdk module) and sees its pdk.Log lines in the host log.
func TestExtismGoPDKTestPlugin(t *testing.T) {
	t.Parallel()
	wasm := mustExtismTestPlugin(t, "log.wasm")
	rt, h := mustLoggingRuntime(t)
	m, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "extism-log", Wasm: wasm})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(context.Background(), "run_test", nil); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(h.lines(), "\n")
	for _, want := range []string{"INFO this is an info log", "WARN this is a warning log", "ERROR this is an error log"} {
		if !strings.Contains(got, want) {
			t.Errorf("host log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Calling function") {
		t.Errorf("go-sdk's own chatter reached the host log:\n%s", got)
	}
}

// mustExtismTestPlugin reads wasm/<name> of the extism/go-sdk module this
// repository builds with (from the module cache).
func mustExtismTestPlugin(t *testing.T, name string) []byte {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/extism/go-sdk").Output()
	if err != nil {
		t.Fatalf("locating the extism/go-sdk module: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "wasm", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
