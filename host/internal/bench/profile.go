package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// profileSeconds is the length of the CPU profile taken when a throughput
// goal misses.
const profileSeconds = 8

// explain profiles skillhost (sh) under one more load of body — not
// counted — and attaches the profile's top functions to row, so a miss comes
// with what the host spends its time on. The profile file is kept in
// Harness.ProfileDir when set.
func (h *Harness) explain(ctx context.Context, row *Row, sh *Proc, body []byte, check func(int, []byte) (string, error)) {
	if !h.Profile || row.Pass || row.Err != nil {
		return
	}
	dir := h.ProfileDir
	if dir == "" {
		dir = h.Work
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		row.Notes = append(row.Notes, "no profile: "+err.Error())
		return
	}
	file := filepath.Join(dir, strings.ToLower(row.ID)+"-skillhost.cpu.pprof")
	done := make(chan error, 1)
	go func() {
		defer close(done)
		_, _ = Run(ctx, Load{Addr: sh.Addr, Concurrency: h.Concurrency, Duration: (profileSeconds + 2) * time.Second,
			Body: func(int, int) []byte { return body }, Check: check})
	}()
	status, prof, err := fasthttp.GetTimeout(nil, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", sh.Addr, profileSeconds),
		(profileSeconds+30)*time.Second)
	<-done
	if err == nil && status != 200 {
		err = fmt.Errorf("HTTP %d", status)
	}
	if err == nil {
		err = os.WriteFile(file, prof, 0o644)
	}
	if err != nil {
		row.Notes = append(row.Notes, "no profile: "+err.Error())
		return
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=30", h.bin("skillhost"), file).Output()
	if err != nil {
		row.Notes = append(row.Notes, fmt.Sprintf("profile saved in %s (go tool pprof failed: %v)", file, err))
		return
	}
	row.Profile = fmt.Sprintf("CPU profile of skillhost under the same load (%d s, `go tool pprof -top -cum %s`):\n\n%s",
		profileSeconds, filepath.Base(file), trimProfile(string(top)))
}

// trimProfile keeps pprof's summary lines and its table.
func trimProfile(top string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(top), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") ||
			strings.HasPrefix(l, "Time:") || strings.HasPrefix(l, "Showing top") || strings.HasPrefix(l, "Dropped") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}
