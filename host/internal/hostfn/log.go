package hostfn

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/skillhost/skillhost/host/fault"
)

// Caps of the log host function.
const (
	MaxLogMessage = 4 << 10  // bytes kept of one message; the rest is cut
	MaxLogRequest = 64 << 10 // bytes of one log request block
	LogRate       = 20       // sustained log lines per second per plugin
	LogBurst      = 50       // log lines a plugin may emit at once
)

type logRequest struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

type logResult struct{}

// dropCounter counts log lines refused by the rate limit since the last one
// that got through.
type dropCounter struct{ n atomic.Int64 }

// log writes a plugin's message to the host log at its level, attributed to
// plugin, skill, session and request. Lines over the per-plugin rate are
// dropped (rate_limited); the next line that gets through reports how many.
func (f *funcs) log(ctx context.Context, call *Call, req []byte) (any, *guestError) {
	var r logRequest
	if gerr := decodeRequest(req, &r); gerr != nil {
		return nil, gerr
	}
	level, ok := parseLevel(r.Level)
	if !ok {
		return nil, errorf(fault.GuestBadRequest, "level %q: want debug, info, warn or error", truncate(r.Level, 32))
	}
	if !f.logLimit.Allow() {
		f.dropped.n.Add(1)
		return nil, errorf(fault.GuestRateLimited, "more than %d log lines per second", LogRate)
	}
	attrs := f.attrs(ctx, call, "source", "plugin")
	if n := f.dropped.n.Swap(0); n > 0 {
		attrs = append(attrs, "dropped_before", n)
	}
	f.deps.Logger.Log(ctx, level, truncate(r.Message, MaxLogMessage), attrs...)
	return logResult{}, nil
}

func parseLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(s) {
	case "trace", "debug":
		return slog.LevelDebug, true
	case "info", "":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}

// truncate returns s as valid UTF-8 of at most max bytes, marking a cut with
// "…" (counted in max).
func truncate(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
