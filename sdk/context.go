package sdk

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk/internal/wire"
)

// Context is what the host grants the running call: its config, the host log,
// progress reports, the calling session's context and HTTP. A Context is valid
// only during the Handle call that created it and is not safe for concurrent
// use.
type Context struct {
	t Transport
}

// Config returns the value of key from the manifest's permissions.config.
func (c *Context) Config(key string) (string, bool) {
	return c.t.Config(key)
}

// Log writes msg to the host log at level, attributed to the plugin, skill
// and session. The host caps the message length and rate-limits each plugin;
// messages over the limit are dropped, so Log never fails the skill.
func (c *Context) Log(level Level, msg string) {
	req, _ := json.Marshal(wire.LogRequest{Level: level.String(), Message: cut(msg, maxLogMessage)}) // strings always encode
	_ = decodeReply(wire.FnLog, c.t.Call(wire.FnLog, req), nil)
}

// maxLogMessage is the host's cap on one log message (bytes); Log cuts
// longer messages itself so they are never refused as too large.
const maxLogMessage = 4 << 10

// cut returns s cut to at most max bytes on a UTF-8 boundary.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// Logf is Log with a formatted message.
func (c *Context) Logf(level Level, format string, args ...any) {
	c.Log(level, fmt.Sprintf(format, args...))
}

// Progress reports progress (0–100) with a short message to whoever is
// waiting for the call (a streaming client, a plan). It fails with code
// CodeRateLimited when reported too often; a skill may ignore that error.
func (c *Context) Progress(percent float64, message string) error {
	return c.ProgressData(percent, message, nil)
}

// ProgressData is Progress with an extra JSON-encodable payload.
func (c *Context) ProgressData(percent float64, message string, data any) error {
	p := wire.ProgressRequest{Percent: percent, Message: message}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return Errorf(CodeInvalidInput, "progress data does not encode: %v", err)
		}
		p.Data = raw
	}
	req, err := json.Marshal(p)
	if err != nil {
		return Errorf(CodeInvalidInput, "progress does not encode: %v", err) // NaN or Inf percent
	}
	return decodeReply(wire.FnProgress, c.t.Call(wire.FnProgress, req), nil)
}

// Get reads key from the calling session's context into v. It reports false
// (and leaves v alone) when the key is absent or expired. Calls without a
// session fail with code CodeNoSession.
func (c *Context) Get(key string, v any) (bool, error) {
	req, _ := json.Marshal(wire.ContextGetRequest{Key: key})
	var res wire.ContextGetResult
	if err := decodeReply(wire.FnContextGet, c.t.Call(wire.FnContextGet, req), &res); err != nil {
		return false, err
	}
	if !res.Found {
		return false, nil
	}
	if err := json.Unmarshal(res.Value, v); err != nil {
		return true, fmt.Errorf("sdk: context key %q: %w", key, err)
	}
	return true, nil
}

// Set stores v (any JSON-encodable value) under key in the calling session's
// context. A positive ttl expires the value after that long (the host rounds
// up to whole milliseconds); zero keeps it for the session's life.
func (c *Context) Set(key string, v any, ttl time.Duration) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return InvalidInput("context value for %q does not encode: %v", key, err)
	}
	if ttl < 0 {
		return InvalidInput("negative ttl %v", ttl)
	}
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++
	}
	req, _ := json.Marshal(wire.ContextSetRequest{Key: key, Value: raw, TTLMs: ms})
	return decodeReply(wire.FnContextSet, c.t.Call(wire.FnContextSet, req), nil)
}
