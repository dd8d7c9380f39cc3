package devkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/skillhost/skillhost/host/fault"
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
	// Verbose also prints each example's output. Optional.
	Verbose bool
	// CacheDir is wazero's compilation cache. Optional. Default: in memory.
	CacheDir string
	// Net is the network policy of http_fetch (e.g. AllowPrivate for a
	// loopback test server). Optional. Default: hostfn defaults (public
	// addresses only).
	Net hostfn.NetPolicy
	// Logger receives plugin logs and host diagnostics. Optional. Default:
	// discard.
	Logger *slog.Logger
}

// ExampleResult is the outcome of one manifest example.
type ExampleResult struct {
	Skill    string          `json:"skill"`
	Index    int             `json:"index"` // position in the skill's examples
	Input    json.RawMessage `json:"input"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`  // why it failed
	Reason   string          `json:"reason,omitempty"` // fault reason of the failure
	Duration time.Duration   `json:"duration_ns"`
	Passed   bool            `json:"passed"`
}

// TestReport is the outcome of Test.
type TestReport struct {
	Plugin  string          `json:"plugin"`
	Results []ExampleResult `json:"results"`
	Passed  int             `json:"passed"`
	Failed  int             `json:"failed"`
}

// Test loads the plugin folder in the real sandbox (host/internal/sandbox behind a
// host/internal/plugin registry, host functions wired to an embedded state store with
// one session) under DevPolicy, runs every example of every skill in
// manifest order (so a skill may see the context an earlier one set) and
// checks each output against the skill's output_schema. A skill without
// examples counts as a failure. The error is for failing to run the tests
// at all (bad manifest, module that does not load); failed examples are
// counted in the report.
func Test(ctx context.Context, dir string, opts TestOptions) (*TestReport, error) {
	m, err := plugin.LoadManifest(dir)
	if err != nil {
		return nil, oneLine(err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h, err := newHarness(ctx, dir, m, harnessOptions{cacheDir: opts.CacheDir, net: opts.Net, logger: logger})
	if err != nil {
		return nil, fmt.Errorf("test %s: %w", dir, err)
	}
	defer h.close(context.WithoutCancel(ctx))
	rep := &TestReport{Plugin: m.Name, Results: []ExampleResult{}}
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	for _, sk := range h.plugin.Manifest.Skills {
		if len(sk.Examples) == 0 {
			r := ExampleResult{Skill: sk.ID, Index: -1, Error: "the skill has no examples"}
			rep.add(r)
			fmt.Fprintf(out, "FAIL %-24s (no examples)\n", sk.ID)
			continue
		}
		for i, ex := range sk.Examples {
			r := h.run(ctx, sk, i, ex)
			rep.add(r)
			printResult(out, r, opts.Verbose)
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", rep.Passed, rep.Failed)
	return rep, nil
}

func (rep *TestReport) add(r ExampleResult) {
	rep.Results = append(rep.Results, r)
	if r.Passed {
		rep.Passed++
	} else {
		rep.Failed++
	}
}

// run executes one example through the registry, as a client call would.
func (h *harness) run(ctx context.Context, sk *plugin.Skill, i int, input json.RawMessage) ExampleResult {
	r := ExampleResult{Skill: sk.ID, Index: i, Input: input}
	start := time.Now()
	call := &hostfn.Call{SessionID: h.session, Plugin: h.plugin.Manifest.Name, Skill: sk.ID, RequestID: fmt.Sprintf("plugin-test-%s-%d", sk.ID, i)}
	o, err := h.reg.Execute(ctx, plugin.Call{
		SkillID: sk.ID, Agent: h.plugin.Manifest.Name, Input: input,
		SessionID: h.session, RequestID: call.RequestID,
		Decorate: func(c context.Context) context.Context { return hostfn.WithCall(c, call) },
	})
	r.Duration = time.Since(start)
	if err != nil {
		fe := fault.From(err)
		r.Error, r.Reason = fe.Message(), fe.Reason
		return r
	}
	r.Duration = o.Duration
	if !json.Valid(o.Output) {
		r.Error = "output is not JSON"
		return r
	}
	var b bytes.Buffer
	if json.Compact(&b, o.Output) == nil {
		r.Output = b.Bytes()
	}
	r.Passed = true
	return r
}

func printResult(w io.Writer, r ExampleResult, verbose bool) {
	d := r.Duration.Round(10 * time.Microsecond)
	if r.Passed {
		fmt.Fprintf(w, "PASS %-24s example %d  %v\n", r.Skill, r.Index+1, d)
		if verbose {
			fmt.Fprintf(w, "     in:  %s\n     out: %s\n", r.Input, clip(string(r.Output)))
		}
		return
	}
	reason := ""
	if r.Reason != "" {
		reason = " [" + r.Reason + "]"
	}
	fmt.Fprintf(w, "FAIL %-24s example %d  %v: %s%s\n     in:  %s\n", r.Skill, r.Index+1, d, r.Error, reason, r.Input)
}

func clip(s string) string {
	if len(s) <= maxShownOutput {
		return s
	}
	return s[:maxShownOutput] + "…"
}
