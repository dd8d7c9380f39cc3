package devkit_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/devkit"
)

// TestTestReportsFailures: an output that breaks the output_schema and an
// input the plugin refuses are both FAIL lines with their reason.
func TestTestReportsFailures(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, scaffolded(t))
	yaml := filepath.Join(dir, "plugin.yaml")
	mustEdit(t, yaml, "greeting: {type: string}", "greeting: {type: string, maxLength: 12}")
	mustEdit(t, yaml, `- '{"name":"Ada","excited":true}'`, `- '{"name":"Ada","excited":true}'
      - '{"name":"   "}'`)
	var out strings.Builder
	rep, err := devkit.Test(context.Background(), dir, devkit.TestOptions{Out: &out, CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Passed bool
		Reason string
	}
	var got []row
	for _, r := range rep.Results {
		got = append(got, row{r.Passed, r.Reason})
	}
	want := []row{{false, "output_schema"}, {true, ""}, {false, "plugin_error"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s\noutput:\n%s", diff, out.String())
	}
	if rep.Passed != 1 || rep.Failed != 2 || !strings.HasSuffix(out.String(), "1 passed, 2 failed\n") {
		t.Errorf("summary: %d passed, %d failed; output:\n%s", rep.Passed, rep.Failed, out.String())
	}
	if !strings.Contains(out.String(), "FAIL greeter_hello") || !strings.Contains(out.String(), "name is empty") {
		t.Errorf("the failure lines do not say why:\n%s", out.String())
	}
}

func TestTestFailsASkillWithoutExamples(t *testing.T) {
	t.Parallel()
	dir := copyPlugin(t, scaffolded(t))
	yaml := filepath.Join(dir, "plugin.yaml")
	mustEdit(t, yaml, `    examples:
      - '{"name":"world"}'
      - '{"name":"Ada","excited":true}'
`, "")
	var out strings.Builder
	rep, err := devkit.Test(context.Background(), dir, devkit.TestOptions{Out: &out, CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 1 || !strings.Contains(out.String(), "(no examples)") {
		t.Errorf("%d failed; output:\n%s", rep.Failed, out.String())
	}
}

func TestTestRefusesAPluginThatDoesNotLoad(t *testing.T) {
	t.Parallel()
	_, err := devkit.Test(context.Background(), "testdata/odd", devkit.TestOptions{CacheDir: shared.cacheDir})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("error = %v, want the load error naming the missing export", err)
	}
}
