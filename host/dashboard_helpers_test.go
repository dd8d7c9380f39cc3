package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// runPlan runs a two-step plan of echo calls to completion.
func runPlan(t *testing.T, th *testHost, key, sid string) {
	t.Helper()
	step := func(id string) map[string]any {
		return map[string]any{"id": id, "type": "skill", "action": "echo", "params": map[string]any{"text": id}}
	}
	th.mustAs(t, key, "_cleveragents/plan/create", map[string]any{"session_id": sid, "plan_id": "dash-plan",
		"plan_definition": map[string]any{"name": "dashboard", "steps": []any{step("one"), step("two")}}})
	th.mustAs(t, key, "_cleveragents/plan/execute", map[string]any{"session_id": sid, "plan_id": "dash-plan"})
	if !waitFor(60*time.Second, func() bool {
		st, _ := th.mustAs(t, key, "_cleveragents/plan/status", map[string]any{"session_id": sid, "plan_id": "dash-plan"})["status"].(string)
		return st == "completed"
	}) {
		t.Fatal("the plan did not complete")
	}
}

// waitPage polls a JavaScript condition in the page until it is true.
func waitPage(t *testing.T, browser context.Context, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(browser, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		html, _ := chromedp.Run(browser, chromedp.Evaluate[string](`document.querySelector("main")?.innerText ?? ""`))
		t.Fatalf("waiting for %s: %v\npage:\n%.3000s", what, err, html)
	}
}

func mustGetJSON(t *testing.T, th *testHost, key, path string, v any) {
	t.Helper()
	status, _, body := th.getAs(t, key, path, nil)
	if status != 200 {
		t.Fatalf("GET %s: HTTP %d: %s", path, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// mustMetrics reads /metrics into metric families.
func mustMetrics(t *testing.T, th *testHost, key string) map[string]*dto.MetricFamily {
	t.Helper()
	status, _, body := th.getAs(t, key, "/metrics", nil)
	if status != 200 {
		t.Fatalf("GET /metrics: HTTP %d", status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// sample is the value of the series of family name whose labels include
// want (-1 when there is none).
func sample(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// metricsDoc is the metrics reference; its table lists every skillhost_
// metric a host without remote agents exposes.
const metricsDoc = "../docs/reference/metrics.md"

// docMetrics lists the metric names of the metrics reference's table (the
// rows that start with a skillhost_ name; the remote agents' metrics are
// prose below it).
func docMetrics(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `(skillhost_[a-z_]+)`")
	var names []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			names = append(names, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatalf("%s has no metrics table", metricsDoc)
	}
	return names
}

// mustPublisher is a plugin publisher's Ed25519 signer (not trusted by the
// host: its plugins show "<kid> (untrusted)").
func mustPublisher(t *testing.T) *identity.Signer {
	t.Helper()
	k, err := identity.Generate(identity.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	s, err := identity.NewSigner([]*identity.PrivateKey{k}, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
