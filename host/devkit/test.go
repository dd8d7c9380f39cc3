package devkit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// maxShownOutput caps the output quoted in a result line.
const maxShownOutput = 160

// TestOptions configure Test.
type TestOptions struct {
	// Out receives a line per example as it runs and the summary line.
	// Optional. Default: silent.
	Out io.Writer
	// Verbose also prints each example's input and output, and the plugin's
	// log lines and progress reports under the example that produced them.
	// Optional.
	Verbose bool
	// Network runs the examples marked needs_network (they are skipped
	// otherwise). Optional.
	Network bool
	// CacheDir is wazero's compilation cache. Optional. Default: in memory.
	CacheDir string
	// AllowPrivate lists the internal address ranges http_fetch may reach
	// (e.g. PrivateRanges for a loopback test server); the rest of the
	// network policy is the default net.* configuration. Optional.
	// Default: none (public addresses only).
	AllowPrivate []netip.Prefix
	// Logger receives plugin logs and host diagnostics when not Verbose.
	// Optional. Default: discard.
	Logger *slog.Logger
}

// Outcome of one example.
const (
	Passed  = "pass"
	Failed  = "fail"
	Skipped = "skip"
)

// ExampleResult is the outcome of one manifest example.
type ExampleResult struct {
	Skill  string          `json:"skill"`
	Index  int             `json:"index"` // position in the skill's examples
	Input  json.RawMessage `json:"input"`
	Status string          `json:"status"` // Passed, Failed or Skipped
	// Output is what a caller would receive: the plugin's JSON output,
	// null for an empty output, a JSON string for other text.
	Output json.RawMessage `json:"output,omitempty"`
	// Error is why the example failed, or why it was skipped.
	Error string `json:"error,omitempty"`
	// Reason is the fault reason of the call's error (also on a pass
	// that expected it).
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Passed   bool          `json:"passed"`
}

// TestReport is the outcome of Test.
type TestReport struct {
	Plugin   string          `json:"plugin"`
	Results  []ExampleResult `json:"results"`
	Passed   int             `json:"passed"`
	Failed   int             `json:"failed"`
	Skipped  int             `json:"skipped"`
	Warnings []string        `json:"warnings"` // e.g. a skill without examples
}

// Test loads the plugin folder in the real sandbox (host/internal/sandbox
// behind a host/internal/plugin registry, host functions wired to an
// embedded state store with one session) under devPolicy and runs every
// example of every skill in manifest order (so a skill may see the context
// an earlier one set). An example passes when the call succeeds (its output
// valid against the output_schema) and equals the expected output if one is
// given, or when it fails as an expected error describes. Examples marked
// needs_network are skipped unless TestOptions.Network is set. A skill
// without examples is a warning, not a failure. The error is for failing to
// run the tests at all (bad manifest, module that does not load).
func Test(ctx context.Context, dir string, opts TestOptions) (*TestReport, error) {
	m, err := plugin.LoadManifest(dir)
	if err != nil {
		return nil, oneLine(err)
	}
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	logger, capture := opts.Logger, (*logCapture)(nil)
	if opts.Verbose {
		capture = &logCapture{}
		logger = slog.New(capture)
	} else if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h, err := newHarness(ctx, dir, m, harnessOptions{cacheDir: opts.CacheDir, allowPrivate: opts.AllowPrivate, logger: logger})
	if err != nil {
		return nil, fmt.Errorf("test %s: %w", dir, err)
	}
	defer h.close(context.WithoutCancel(ctx))
	rep := &TestReport{Plugin: m.Name, Results: []ExampleResult{}, Warnings: []string{}}
	for _, sk := range h.plugin.Manifest.Skills {
		if len(sk.Examples) == 0 {
			w := fmt.Sprintf("skill %s has no examples; add some to plugin.yaml so plugin test can check it", sk.ID)
			rep.Warnings = append(rep.Warnings, w)
			fmt.Fprintf(out, "WARN %s\n", w)
			continue
		}
		for i, ex := range sk.Examples {
			var r ExampleResult
			if ex.NeedsNetwork && !opts.Network {
				r = ExampleResult{Skill: sk.ID, Index: i, Input: ex.Input, Status: Skipped,
					Error: "needs the network; run with --network"}
			} else {
				r = h.run(ctx, sk, i, ex, capture)
			}
			rep.add(r)
			printResult(out, r, opts.Verbose)
			capture.flush(out)
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed", rep.Passed, rep.Failed)
	if rep.Skipped > 0 {
		fmt.Fprintf(out, ", %d skipped", rep.Skipped)
	}
	fmt.Fprintln(out)
	return rep, nil
}

func (rep *TestReport) add(r ExampleResult) {
	rep.Results = append(rep.Results, r)
	switch r.Status {
	case Passed:
		rep.Passed++
	case Skipped:
		rep.Skipped++
	default:
		rep.Failed++
	}
}

// run executes one example through the registry, as a client call would,
// and checks the outcome against the example's expectation. A multi-turn
// example (asks, turns) runs as an A2A task's turns: each follow-up is the
// next call, with the task's history so far (turns.go).
func (h *harness) run(ctx context.Context, sk *plugin.Skill, i int, ex plugin.Example, capture *logCapture) ExampleResult {
	r := ExampleResult{Skill: sk.ID, Index: i, Input: ex.Input}
	start := time.Now()
	task := &hostfn.Task{ID: fmt.Sprintf("plugin-test-%s-%d", sk.ID, i), Turn: 1, History: []hostfn.Message{firstMessage(ex.Input)}}
	steps := append([]plugin.Turn{{Reply: ex.Input, Asks: ex.Asks, Output: ex.Output, Error: ex.Error}}, ex.Turns...)
	var took time.Duration
	for k, st := range steps {
		input := ex.Input
		if k > 0 {
			var msg hostfn.Message
			input, msg = reply(st.Reply)
			task = &hostfn.Task{ID: task.ID, Turn: k + 1, History: append(task.History, msg)}
		}
		o, err := h.call(ctx, sk, i, task, input, capture)
		ask := task.Interrupted()
		if err != nil {
			fe := fault.From(err)
			r.Reason = fe.Reason
			r.Error = check(plugin.Example{Output: st.Output, Error: st.Error}, nil, fe)
		} else {
			took += o.Duration
			r.Output = callerOutput(o.Output)
			r.Error = checkAsk(st, ask, r.Output)
		}
		if r.Error != "" || ask == nil || st.Asks == nil {
			if r.Error != "" && len(steps) > 1 {
				r.Error = fmt.Sprintf("turn %d: %s", k+1, r.Error)
			}
			break
		}
		r.Output = nil
		task.History = append(task.History, hostfn.Message{Role: "agent", Text: ask.Text, Data: ask.Data})
	}
	r.Duration = time.Since(start)
	if took > 0 {
		r.Duration = took
	}
	r.Passed = r.Error == ""
	r.Status = Failed
	if r.Passed {
		r.Status = Passed
	}
	return r
}

// call runs one turn of an example.
func (h *harness) call(ctx context.Context, sk *plugin.Skill, i int, task *hostfn.Task, input json.RawMessage, capture *logCapture) (*plugin.Outcome, error) {
	call := &hostfn.Call{Plugin: h.plugin.Manifest.Name, Skill: sk.ID, Task: task}
	if capture != nil {
		call.Progress = capture
	}
	ctx = auth.Invoke(ctx, auth.Invocation{SessionID: h.session, RequestID: fmt.Sprintf("plugin-test-%s-%d", sk.ID, i)})
	return h.reg.Execute(hostfn.WithCall(ctx, call), plugin.Call{
		SkillID: sk.ID, Agent: h.plugin.Manifest.Name, Input: input, FollowUp: task.Turn > 1, Turn: task,
	})
}

func printResult(w io.Writer, r ExampleResult, verbose bool) {
	d := r.Duration.Round(10 * time.Microsecond)
	switch r.Status {
	case Skipped:
		fmt.Fprintf(w, "SKIP %-24s example %d  (%s)\n", r.Skill, r.Index+1, r.Error)
		return
	case Passed:
		note := ""
		if r.Reason != "" {
			note = "  (expected error " + r.Reason + ")"
		}
		fmt.Fprintf(w, "PASS %-24s example %d  %v%s\n", r.Skill, r.Index+1, d, note)
		if verbose {
			fmt.Fprintf(w, "     in:  %s\n", clip(string(r.Input)))
			if r.Output != nil {
				fmt.Fprintf(w, "     out: %s\n", clip(string(r.Output)))
			}
		}
		return
	}
	reason := ""
	if r.Reason != "" && !strings.Contains(r.Error, "reason "+r.Reason) {
		reason = " [" + r.Reason + "]"
	}
	fmt.Fprintf(w, "FAIL %-24s example %d  %v: %s%s\n     in:  %s\n", r.Skill, r.Index+1, d, r.Error, reason, clip(string(r.Input)))
}

func clip(s string) string {
	if len(s) <= maxShownOutput {
		return s
	}
	return s[:maxShownOutput] + "…"
}
