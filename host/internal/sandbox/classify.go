package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/sys"

	"github.com/skillhost/skillhost/host/fault"
)

// maxMessage caps a plugin-supplied error message (and its JSON data).
const maxMessage = 4 << 10

// ctxFault classifies a done context: the caller's cancel, or a deadline.
func ctxFault(ctx context.Context, timeout time.Duration) *fault.Error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fault.Wrap(fault.Canceled, fault.ReasonCanceled, ctx.Err(), "call canceled by the caller")
	}
	return fault.Wrap(fault.Timeout, fault.ReasonTimeout, context.DeadlineExceeded,
		fmt.Sprintf("call exceeded its deadline (limit %v)", timeout)).With("timeout_ms", timeout.Milliseconds())
}

// appliedDeadline makes a timeout fault report the deadline the call
// actually had (the caller's, when it was shorter than the plugin's limit),
// measured from start. Other faults are returned as they are.
func appliedDeadline(f *fault.Error, callCtx context.Context, start time.Time) *fault.Error {
	if f == nil || f.Kind != fault.Timeout {
		return f
	}
	d, ok := callCtx.Deadline()
	if !ok {
		return f
	}
	applied := d.Sub(start).Round(time.Millisecond)
	out := f.With("timeout_ms", applied.Milliseconds())
	out.Msg = strings.Replace(f.Msg, "call exceeded its deadline", fmt.Sprintf("call exceeded its deadline of %v", applied), 1)
	if i := strings.Index(out.Msg, " (limit "); i >= 0 {
		out.Msg = out.Msg[:i]
	}
	return out
}

// deadlineFault reports whether the call ended because a context ended and
// returns its fault. Evidence: the contexts themselves, or wazero's exit
// codes for a context-closed module.
func deadlineFault(ctx, callCtx context.Context, err error, timeout time.Duration) *fault.Error {
	if ctx.Err() != nil {
		return ctxFault(ctx, timeout)
	}
	if callCtx.Err() != nil {
		return ctxFault(callCtx, timeout)
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		switch ee.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return ctxFault(callCtx, timeout) // callCtx.Err() raced; still a deadline
		case sys.ExitCodeContextCanceled:
			return fault.Wrap(fault.Canceled, fault.ReasonCanceled, err, "call canceled by the caller")
		}
	}
	return nil
}

// memoryFault is the memory_limit fault.
func (m *Module) memoryFault(err error) *fault.Error {
	return fault.Wrap(fault.ResourceExhausted, fault.ReasonMemoryLimit, err,
		fmt.Sprintf("plugin %q exceeded its memory cap of %s", m.name, formatBytes(m.limits.MemoryBytes))).
		With("memory_limit_bytes", m.limits.MemoryBytes)
}

// stackFault is the memory_limit fault of a call that exhausted wazero's
// call stack: the stack is host memory like any other, and its ceiling is
// part of the module's budgeted cost.
func (m *Module) stackFault(err error) *fault.Error {
	return fault.Wrap(fault.ResourceExhausted, fault.ReasonMemoryLimit, err,
		fmt.Sprintf("plugin %q exhausted its call stack (too deep a recursion: wazero stops a call past %d MB of stack)", m.name, stackCeilingBytes/1_000_000)).
		With("limit", "call_stack")
}

// wasmRuntimeErrors is the package of wazero's runtime error values.
const wasmRuntimeErrors = "github.com/tetratelabs/wazero/internal/wasmruntime"

// isStackOverflow reports whether err carries wazero's own stack-overflow
// error: a value of wazero's internal error type, which no guest can
// produce (a guest's words come back as plain strings).
func isStackOverflow(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		t := reflect.TypeOf(e)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.PkgPath() == wasmRuntimeErrors && e.Error() == "stack overflow" {
			return true
		}
	}
	return false
}

// instantiateFault classifies a failed instantiation (start function or
// memory allocation under the call's deadline).
func (m *Module) instantiateFault(ctx, callCtx context.Context, err error) *fault.Error {
	if f := deadlineFault(ctx, callCtx, err, m.limits.Timeout); f != nil {
		f.Msg = "instantiating the plugin: " + f.Msg
		return f
	}
	var ie *instantiateError
	if errors.As(err, &ie) && ie.meter.Refusals() > 0 {
		return m.memoryFault(err)
	}
	if isStackOverflow(err) {
		return m.stackFault(err)
	}
	return fault.Wrap(fault.SkillFailed, fault.ReasonTrap, err, "instantiating the plugin failed: "+firstLine(err.Error()))
}

// classify turns the outcome of CallWithContext into a fault (nil on
// success) and says whether the instance may serve another call. An
// instance whose guest exited (WASI proc_exit) is never kept, whatever the
// call returns.
func (m *Module) classify(ctx, callCtx context.Context, inst *instance, refusalsBefore uint64,
	function string, rc uint32, out []byte, err error) (*fault.Error, bool) {
	f, keep := m.classifyCall(ctx, callCtx, inst, refusalsBefore, function, rc, out, err)
	return f, keep && !inst.exited.Load()
}

// classifyCall is classify without the exit check. proc_exit(0) reaches it
// as a success (Extism drops the exit error for code 0), with the output
// the guest set before exiting; proc_exit(n), n != 0, as an exit error.
func (m *Module) classifyCall(ctx, callCtx context.Context, inst *instance, refusalsBefore uint64,
	function string, rc uint32, out []byte, err error) (*fault.Error, bool) {
	if err == nil && inst.meter.Refusals() > refusalsBefore {
		// The guest carried on after the cap refused a growth (Extism's
		// kernel, for one, silently drops an output it cannot allocate):
		// its result cannot be trusted.
		return m.memoryFault(errors.New("memory growth refused during the call")), false
	}
	if err == nil {
		if int64(len(out)) > m.limits.OutputBytes {
			return fault.Newf(fault.ResourceExhausted, fault.ReasonOutputLimit,
				"plugin %q produced %d bytes of output, over the cap of %s", m.name, len(out), formatBytes(uint64(m.limits.OutputBytes))).
				With("output_bytes", len(out)).With("output_limit_bytes", m.limits.OutputBytes), true
		}
		if rc != 0 {
			return fault.Newf(fault.SkillFailed, fault.ReasonPluginError,
				"%s returned %d without an error message", function, rc).With("plugin_code", fmt.Sprint(rc)), true
		}
		return nil, true
	}
	if f := deadlineFault(ctx, callCtx, err, m.limits.Timeout); f != nil {
		return f, false
	}
	if inst.meter.Refusals() > refusalsBefore {
		return m.memoryFault(err), false
	}
	if isStackOverflow(err) {
		return m.stackFault(err), false
	}
	var ee *sys.ExitError
	isExit := errors.As(err, &ee)
	// The guest returned normally and reported an error through error_set:
	// Extism then returns errors.New(<kernel error>) with nothing wrapped,
	// while traps and exits always wrap their cause.
	if !isExit && errors.Unwrap(err) == nil && err.Error() != "" &&
		err.Error() == inst.plugin.GetErrorWithContext(context.WithoutCancel(ctx)) {
		return pluginError(err.Error()), true
	}
	if isExit {
		return fault.Wrap(fault.SkillFailed, fault.ReasonTrap, err,
			fmt.Sprintf("%s exited with code %d", function, ee.ExitCode())).With("exit_code", ee.ExitCode()), false
	}
	return fault.Wrap(fault.SkillFailed, fault.ReasonTrap, err, "the plugin trapped in "+function+": "+firstLine(err.Error())), false
}

// pluginError builds the plugin_error fault from the guest's error text: a
// JSON object {"message", "code"?, "data"?} is unpacked, anything else is
// used as the message. Both are truncated to 4 KiB.
func pluginError(text string) *fault.Error {
	var body struct {
		Message *string         `json:"message"`
		Code    json.RawMessage `json:"code"`
		Data    json.RawMessage `json:"data"`
	}
	if json.Unmarshal([]byte(text), &body) == nil && body.Message != nil {
		f := fault.New(fault.SkillFailed, fault.ReasonPluginError, truncate(*body.Message, maxMessage))
		var code string
		if len(body.Code) > 0 && json.Unmarshal(body.Code, &code) == nil && code != "" {
			f = f.With("plugin_code", truncate(code, 256))
		}
		if len(body.Data) > 0 && len(body.Data) <= maxMessage && string(body.Data) != "null" {
			f = f.With("plugin_data", body.Data)
		}
		return f
	}
	return fault.New(fault.SkillFailed, fault.ReasonPluginError, truncate(text, maxMessage))
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// firstLine is the first line of a wazero error (its stack trace follows).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncate(s, 512)
}
