package sandbox

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	extism "github.com/extism/go-sdk"
	"golang.org/x/time/rate"
)

// Caps of Extism's own log functions (extism:host/env log_debug, log_info,
// log_warn, log_error; go-pdk's pdk.Log), the same as those of the
// skillhost log host function: each path has its own budget.
const (
	GuestLogRate    = 20      // sustained lines per second per plugin
	GuestLogBurst   = 50      // lines a plugin may emit at once
	MaxGuestLogLine = 4 << 10 // bytes kept of one message; the rest is cut
)

// extismLogLevel makes go-sdk pass guest log lines at debug level and above
// to the instance loggers. go-sdk keeps this level in a process-wide
// variable whose default drops every line; trace lines stay dropped (they
// are mostly go-sdk's own chatter during instantiation, printed with the
// standard log package before an instance logger can be set).
var extismLogLevel sync.Once

func enableExtismLogs() {
	extismLogLevel.Do(func() { extism.SetLogLevel(extism.LogLevelDebug) })
}

// guestLog forwards a module's Extism log lines to the host logger at their
// level, attributed to the plugin and the running function, rate-limited
// per module; the next line that gets through reports how many were dropped.
type guestLog struct {
	logger  *slog.Logger
	plugin  string
	limit   *rate.Limiter
	dropped atomic.Int64
}

func newGuestLog(logger *slog.Logger, plugin string) *guestLog {
	return &guestLog{logger: logger, plugin: plugin, limit: rate.NewLimiter(GuestLogRate, GuestLogBurst)}
}

// write logs one line of a call running function under ctx.
func (g *guestLog) write(ctx context.Context, function string, level extism.LogLevel, msg string) {
	if hostChatter(level, msg) {
		return
	}
	if !g.limit.Allow() {
		g.dropped.Add(1)
		return
	}
	attrs := []any{"plugin", g.plugin, "function", function, "source", "extism"}
	if n := g.dropped.Swap(0); n > 0 {
		attrs = append(attrs, "dropped_before", n)
	}
	g.logger.Log(ctx, slogLevel(level), truncate(strings.ToValidUTF8(msg, "\uFFFD"), MaxGuestLogLine-len("…")), attrs...)
}

// hostChatter reports go-sdk's own debug lines about running a call, which
// share the guest's log callback ("Calling function : f", runtime
// initialisation). A guest logging the same text loses only that line.
func hostChatter(level extism.LogLevel, msg string) bool {
	if level != extism.LogLevelDebug {
		return false
	}
	return strings.HasPrefix(msg, "Calling function : ") || strings.HasPrefix(msg, "Initializing runtime for ") ||
		msg == "Calling _initialize" || msg == "Calling __wasm_call_ctors" || msg == "Initialized Haskell language runtime."
}

func slogLevel(l extism.LogLevel) slog.Level {
	switch {
	case l >= extism.LogLevelError:
		return slog.LevelError
	case l == extism.LogLevelWarn:
		return slog.LevelWarn
	case l == extism.LogLevelInfo:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}
