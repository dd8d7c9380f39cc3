package devkit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// Caps of what a verbose run shows of one example's logs and progress.
const (
	maxCapturedLines = 200
	maxCapturedLine  = 1 << 10
)

// logCapture is the slog.Handler of a verbose `plugin test`: it keeps the
// plugin's log lines (and progress reports) of the running example so they
// are printed under its result line. A nil *logCapture keeps nothing.
type logCapture struct {
	mu      sync.Mutex
	lines   []string
	dropped int
}

// attribution attributes are left out of the printed line: the example's
// line already says which plugin, skill and call.
var attribution = map[string]bool{"plugin": true, "skill": true, "session_id": true, "request_id": true, "source": true, "function": true}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }

// Handle keeps the record as one line: "log LEVEL message k=v…". Only
// the plugin's own lines (its log host function and Extism's log, which
// carry a source attribute) are kept: the harness's diagnostics, such as
// the embedded state store's start-up banner, are not the plugin's.
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	fromPlugin := false
	r.Attrs(func(a slog.Attr) bool {
		fromPlugin = fromPlugin || a.Key == "source"
		return !fromPlugin
	})
	if !fromPlugin {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "log %-5s %s", strings.ToLower(r.Level.String()), r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if !attribution[a.Key] {
			b.WriteString(" " + a.String())
		}
		return true
	})
	c.add(b.String())
	return nil
}

// Progress implements hostfn.ProgressSink: a progress report is a line of the capture.
func (c *logCapture) Progress(p hostfn.Progress) {
	line := fmt.Sprintf("progress %g%%", p.Percent)
	if p.Message != "" {
		line += " " + p.Message
	}
	if len(p.Data) > 0 {
		line += " " + clip(string(p.Data))
	}
	c.add(line)
}

func (c *logCapture) add(line string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lines) >= maxCapturedLines {
		c.dropped++
		return
	}
	line = strings.ReplaceAll(line, "\n", `\n`)
	if len(line) > maxCapturedLine {
		line = line[:maxCapturedLine] + "…"
	}
	c.lines = append(c.lines, line)
}

// flush prints and forgets the kept lines, indented under a result line.
func (c *logCapture) flush(w io.Writer) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		fmt.Fprintf(w, "     %s\n", l)
	}
	if c.dropped > 0 {
		fmt.Fprintf(w, "     (%d more lines)\n", c.dropped)
	}
	c.lines, c.dropped = c.lines[:0], 0
}
