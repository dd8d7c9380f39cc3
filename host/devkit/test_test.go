package devkit_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/devkit"
)

// TestTestChecksExpectations: plugin test passes and fails on expected
// outputs and expected errors, and says why.
func TestTestChecksExpectations(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, scaffolded(t))
	yaml := filepath.Join(dir, "plugin.yaml")
	mustEdit(t, yaml, "greeting: {type: string}", "greeting: {type: string, maxLength: 20}")
	mustEdit(t, yaml, `      - {input: {name: "  "}, error: {code: invalid_input, reason: plugin_error}}
`, `      - {input: {name: Ada}, output: {greeting: "Hello, Ada!"}}
      - {input: {name: "  "}, error: {code: invalid_input, reason: plugin_error}}
      - {input: {name: "  "}, error: {code: -32103}}
      - {input: {name: "  "}, error: {code: quota}}
      - {input: {name: world}, error: {}}
      - '{"name":"   "}'
      - {input: {name: "a rather long name"}}
      - {input: {name: "a rather long name"}, error: {reason: output_schema}}
`)
	var out strings.Builder
	rep, err := devkit.Test(context.Background(), dir, devkit.TestOptions{Out: &out, CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status, reason, says string
	}{
		{devkit.Passed, "", ""},
		{devkit.Passed, "", ""},
		{devkit.Failed, "", `output {"greeting":"Hello, Ada."}, want {"greeting":"Hello, Ada!"}`},
		{devkit.Passed, "plugin_error", ""},
		{devkit.Passed, "plugin_error", ""},
		{devkit.Failed, "plugin_error", "failed with reason plugin_error, code -32103, plugin code invalid_input (name is empty), want code quota"},
		{devkit.Failed, "", `succeeded with output {"greeting":"Hello, world."}, want an error`},
		{devkit.Failed, "plugin_error", "name is empty"},
		{devkit.Failed, "output_schema", "output does not match output_schema"},
		{devkit.Passed, "output_schema", ""},
	}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d:\n%s", len(rep.Results), len(want), out.String())
	}
	for i, w := range want {
		r := rep.Results[i]
		if r.Status != w.status || r.Reason != w.reason || !strings.Contains(r.Error, w.says) || (w.says == "") != (r.Error == "") {
			t.Errorf("example %d: %s [%s] %q; want %s [%s] %q", i+1, r.Status, r.Reason, r.Error, w.status, w.reason, w.says)
		}
	}
	if rep.Passed != 5 || rep.Failed != 5 || !strings.HasSuffix(out.String(), "\n5 passed, 5 failed\n") {
		t.Errorf("summary: %d passed, %d failed; output:\n%s", rep.Passed, rep.Failed, out.String())
	}
	for _, line := range []string{`PASS greeter_hello +example 4  \S+  \(expected error plugin_error\)\n`,
		`FAIL greeter_hello +example 3  \S+: output .*\n     in:  \{"name":"Ada"\}\n`} {
		if !regexp.MustCompile(line).MatchString(out.String()) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
}

// TestTestOutputAsCallersSeeIt: empty output is null and text is a JSON
// string, as skill/execute returns them; -v shows the plugin's Extism log
// lines and progress under the example.
func TestTestOutputAsCallersSeeIt(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	rep, err := devkit.Test(context.Background(), "testdata/plain", devkit.TestOptions{Out: &out, Verbose: true, CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Status, Output, Error string }
	var got []row
	for _, r := range rep.Results {
		got = append(got, row{r.Status, string(r.Output), r.Error})
	}
	want := []row{
		{devkit.Passed, "null", ""},
		{devkit.Passed, "null", ""},
		{devkit.Failed, "null", "output null, want {}"},
		{devkit.Passed, `"plain text"`, ""},
		{devkit.Passed, `"plain text"`, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s\noutput:\n%s", diff, out.String())
	}
	wantLines := "PASS plain_chatty +example 1  \\S+\n" +
		"     in:  \\{\\}\n     out: \"plain text\"\n" +
		"     log info  from log_info\n" +
		"     progress 50% half way\n"
	if !regexp.MustCompile(wantLines).MatchString(out.String()) {
		t.Errorf("verbose output lacks the log line and progress under the example:\n%s", out.String())
	}
	if strings.Contains(out.String(), "nats-server") {
		t.Errorf("verbose output shows the embedded state store's log as the plugin's:\n%s", out.String())
	}
}

// TestTestWarnsASkillWithoutExamples: validate and test agree with the
// host, which loads such a plugin: a warning, not a failure.
func TestTestWarnsASkillWithoutExamples(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, scaffolded(t))
	yaml := filepath.Join(dir, "plugin.yaml")
	mustEdit(t, yaml, `    examples:                # plugin test runs each; output and error are checked when given
      - '{"name":"world"}'
      - {input: {name: Ada, excited: true}, output: {greeting: "Hello, Ada!"}}
      - {input: {name: "  "}, error: {code: invalid_input, reason: plugin_error}}
`, "    examples: []\n")
	var out strings.Builder
	rep, err := devkit.Test(context.Background(), dir, devkit.TestOptions{Out: &out, CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || len(rep.Warnings) != 1 || !strings.Contains(out.String(), "WARN skill greeter_hello has no examples") {
		t.Errorf("%d failed, warnings %q; output:\n%s", rep.Failed, rep.Warnings, out.String())
	}
	v := mustValidate(t, dir)
	if !v.OK() || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "greeter_hello has no example") {
		t.Errorf("validate: problems %q, warnings %q; want only the warning", v.Problems, v.Warnings)
	}
}

func TestTestRefusesAPluginThatDoesNotLoad(t *testing.T) {
	t.Parallel()
	_, err := devkit.Test(context.Background(), "testdata/odd", devkit.TestOptions{CacheDir: shared.cacheDir})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("error = %v, want the load error naming the missing export", err)
	}
}

// TestTestRunsTurns: a multi-turn example (asks, turns) runs as an A2A
// task's turns with its history, and a turn that does not ask what it
// says, or ends otherwise, fails naming the turn.
func TestTestRunsTurns(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, builtFirstParty(t, "form"))
	yaml := filepath.Join(dir, "plugin.yaml")
	mustEdit(t, yaml, `      - input: {fields: []}
        error: {code: invalid_input, reason: plugin_error}
`, `      - input: {fields: []}
        error: {code: invalid_input, reason: plugin_error}
      - input: {fields: [name]}
        asks: phone
        turns: [{reply: Ada, output: {name: Ada}}]
      - input: {fields: [name, email]}
        asks: name
        turns: [{reply: Ada, output: {name: Ada}}]
      - {input: {fields: [name]}}
`)
	var out strings.Builder
	rep, err := devkit.Test(context.Background(), dir, devkit.TestOptions{Out: &out, CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "", "",
		`turn 1: asked "Please enter name (1 of 1).", want a question containing "phone"`,
		`turn 2: asked for input (input-required: "Please enter email (2 of 2).")`,
		`asked for input (input-required: "Please enter name (1 of 1)."); a multi-turn example says so with asks and answers with turns`}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d:\n%s", len(rep.Results), len(want), out.String())
	}
	for i, w := range want {
		if r := rep.Results[i]; (w == "") != r.Passed || !strings.Contains(r.Error, w) {
			t.Errorf("example %d: passed %v %q, want %q", i+1, r.Passed, r.Error, w)
		}
	}
}
