package bench

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/sandbox"
)

func TestLoadRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"10.0.0.1:80", "example.com:80", "0.0.0.0:80", "[::]:80", "nonsense"} {
		_, err := Run(context.Background(), Load{Addr: addr, Duration: time.Millisecond,
			Body: func(int, int) []byte { return nil }, Check: func(int, []byte) (string, error) { return "", nil }})
		if err == nil {
			t.Errorf("Run(%q) accepted a non-loopback address", addr)
		}
	}
}

func TestPercentileAndSpread(t *testing.T) {
	t.Parallel()
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i))
	}
	got := LatencyOf(s)
	if diff := cmp.Diff(Latency{P50: 50, P90: 90, P99: 99, Max: 100}, got); diff != "" {
		t.Errorf("LatencyOf (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Spread{Median: 2.5, Min: 1, Max: 4, N: 4}, SpreadOf([]float64{4, 1, 3, 2})); diff != "" {
		t.Errorf("SpreadOf (-want +got):\n%s", diff)
	}
}

// Every copy is a valid, distinct module with the same exports.
func TestCopiesAreDistinctModules(t *testing.T) {
	t.Parallel()
	a, b := withCustomSection(echoWasm, "n", []byte("a")), withCustomSection(echoWasm, "n", []byte("b"))
	if bytes.Equal(a, b) {
		t.Fatal("copies are identical")
	}
	for _, m := range [][]byte{a, b} {
		info, err := sandbox.Inspect(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if !info.HasExport("echo") || !info.HasExport("spin") {
			t.Errorf("exports lost: %+v", info)
		}
	}
}

// The baselines answer what the load generator checks. Two seconds, so a
// loaded machine under -race still completes a request in the window.
func TestBaselinesAnswer(t *testing.T) {
	t.Parallel()
	serve := func(h http.Handler) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return ln.Addr().String()
	}
	fiberLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := FiberEcho()
	go func() { _ = app.Listener(fiberLn) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	tests := []struct {
		name  string
		addr  string
		body  []byte
		check func(int, []byte) (string, error)
	}{
		{"fiber echo", fiberLn.Addr().String(), execBody("sess_x"), checkExec},
		{"a2a-go v2", serve(A2ANative()), sendBody, checkSend},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Load{Addr: tt.addr, Concurrency: 2, Duration: 2 * time.Second,
				Body: func(int, int) []byte { return tt.body }, Check: tt.check})
			if err != nil || res.Errors > 0 || res.Requests == 0 || res.Latency.P99 <= 0 {
				t.Fatalf("%d ok, %d errors (%v), %v", res.Requests, res.Errors, res.FirstErr, err)
			}
		})
	}
}

// TestHarnessSmoke builds the programs and runs every goal but P4, P6 and
// P9 (20 or 100 Go plugins to compile) for a moment: each must produce a
// ratio.
func TestHarnessSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds skillhost and runs the harness")
	}
	t.Parallel()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator),
		"github.com/skillhost/skillhost/cmd/skillhost", "./cmd/fiberecho", "./cmd/a2anative")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var log strings.Builder
	h := &Harness{Bin: bin, Work: filepath.Join(t.TempDir(), "work"), Rounds: 2, Duration: 300 * time.Millisecond,
		Warmup: 50 * time.Millisecond, Concurrency: 4, Samples: 0.05, Progress: &log}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rows, err := h.Run(ctx, []string{"P1", "P2", "P3", "P5", "P7", "P8"})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
		if r.Err != nil || r.Ratio.N == 0 || r.Ratio.Median <= 0 || r.Baseline == "" || r.Subject == "" || r.Target == "" {
			t.Errorf("%s %s: not measured: %+v", r.ID, r.Metric, r)
		}
	}
	if diff := cmp.Diff([]string{"P1", "P1", "P2", "P3", "P5", "P7", "P8"}, ids); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	report := Report(rows, Describe(), time.Now(), time.Minute)
	for _, want := range []string{"| P1 | throughput |", "| P3 |", "durability:", "cores"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if t.Failed() {
		t.Log(log.String())
	}
}
