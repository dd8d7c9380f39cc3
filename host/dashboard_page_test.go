package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// mustBrokenPlugin writes a plugin folder whose manifest does not load.
func mustBrokenPlugin(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name, "plugin.yaml"), []byte("name: "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkCharts waits for the traffic charts to be drawn from the history
// (not an empty skeleton): one card per called skill whose window counts
// are wantCalls (skills no more calls reach), served, failed and
// rate-limited bars where those happened, a latency line with labelled
// axes, and the total chart; the counts agree with GET /admin/history.
func checkCharts(t *testing.T, browser context.Context, th *testHost, key string, wantCalls map[string]int) {
	t.Helper()
	var conds []string
	for skill, n := range wantCalls {
		conds = append(conds, fmt.Sprintf(`document.querySelector('#charts .chart-card[data-skill=%q]')?.dataset.calls === "%d"`, skill, n))
	}
	waitPage(t, browser, "the charts drawn from the history", strings.Join(conds, " && ")+` &&
		document.querySelector('#charts .chart-card[data-skill="tools/echo"] svg.bars rect.bar-ok') !== null &&
		document.querySelector('#charts .chart-card[data-skill="spinner/spin"] svg.bars rect.bar-err') !== null &&
		document.querySelector('#charts .chart-card[data-skill="hostile/hostile-echo"] svg.bars rect.bar-limited') !== null &&
		document.querySelector('#charts .chart-card[data-skill="tools/echo"] svg.latency path.lat-avg') !== null &&
		document.querySelectorAll('#host-chart svg.bars rect').length > 0`)

	var hist struct {
		Skills []struct {
			Plugin, Skill string
			Calls         []int `json:"calls"`
			Limited       []int `json:"rate_limited"`
		} `json:"skills"`
	}
	mustGetJSON(t, th, key, "/admin/history", &hist)
	fromDoc := map[string]int{}
	for _, s := range hist.Skills {
		k := s.Plugin + "/" + s.Skill
		if _, ok := wantCalls[k]; !ok {
			continue
		}
		for _, n := range s.Calls {
			fromDoc[k] += n
		}
	}
	if diff := cmp.Diff(wantCalls, fromDoc); diff != "" {
		t.Errorf("/admin/history calls (-want +got):\n%s", diff)
	}
	type chart struct {
		Bars, Ticks int
		Rule, Sum   string
	}
	got, err := chromedp.Run(browser, chromedp.Evaluate[map[string]chart](`Object.fromEntries([...document.querySelectorAll("#charts .chart-card")].map((c) =>
		[c.dataset.skill, {bars: c.querySelectorAll("svg.bars rect").length, ticks: c.querySelectorAll("svg text.tick").length,
		 rule: c.querySelector(".rule")?.textContent ?? "", sum: c.querySelector(".card-sum").textContent}]))`))
	if err != nil {
		t.Fatal(err)
	}
	for skill, c := range got {
		if c.Bars == 0 || c.Ticks < 8 || !strings.Contains(c.Sum, " calls") {
			t.Errorf("chart of %s: %d bars, %d axis labels, summary %q", skill, c.Bars, c.Ticks, c.Sum)
		}
	}
	if r := got["hostile/hostile-echo"].Rule; r != fmt.Sprintf("≤ %d/h per key", rateLimited) {
		t.Errorf("hostile-echo's chart names its rate as %q", r)
	}
	rule, err := chromedp.Run(browser, chromedp.Evaluate[string](`document.querySelector('#agents tr.skill[data-skill="hostile-echo"] .rule')?.textContent ?? ""`))
	if err != nil || rule != fmt.Sprintf("≤ %d/h per key", rateLimited) {
		t.Errorf("hostile-echo's row names its rate as %q (%v)", rule, err)
	}
}

// tableOrder is what the agents table shows: plugins in order, and the
// skills under each.
type tableOrder struct {
	Agents []string            `json:"agents"`
	Skills map[string][]string `json:"skills"`
}

const readOrder = `(() => { const o = {agents: [], skills: {}};
	for (const r of document.querySelectorAll("#agents tbody tr")) {
		if (r.classList.contains("agent")) { o.agents.push(r.dataset.plugin); o.skills[r.dataset.plugin] = []; }
		if (r.classList.contains("skill")) o.skills[r.dataset.plugin].push(r.dataset.skill);
	}
	o.skills = Object.fromEntries(Object.entries(o.skills).sort((a, b) => a[0] < b[0] ? -1 : 1)); // as Go orders map keys
	return o; })()`

// checkSortAndFilter sorts the agents table by clicking its headers and
// filters it by state and name, checking the rows shown each time.
func checkSortAndFilter(t *testing.T, browser context.Context) {
	t.Helper()
	order := func(what string, want tableOrder) {
		t.Helper()
		wantJSON := mustJSON(t, want)
		if _, err := chromedp.Run(browser, chromedp.Poll[bool](`JSON.stringify(`+readOrder+`) === `+fmt.Sprintf("%q", wantJSON))); err != nil {
			got, _ := chromedp.Run(browser, chromedp.Evaluate[tableOrder](readOrder))
			t.Fatalf("%s: table shows %+v, want %s (%v)", what, got, wantJSON, err)
		}
	}
	click := func(col string) {
		t.Helper()
		if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS(`#agents th[data-sort="`+col+`"]`))); err != nil {
			t.Fatal(err)
		}
	}
	filter := func(state, text string) {
		t.Helper()
		if _, err := chromedp.Run(browser, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			const s = document.getElementById("filter-state"); s.value = %q; s.dispatchEvent(new Event("change"));
			const q = document.getElementById("filter-text"); q.value = %q; q.dispatchEvent(new Event("input")); })()`, state, text))); err != nil {
			t.Fatal(err)
		}
	}
	all := map[string][]string{"broken": {}, "hostile": {"fail", "grow", "hostile-echo", "huge-output", "loop", "recurse", "trap"},
		"spinner": {"spin", "spin-echo"}, "tools": {"echo", "strict-echo"}}
	order("by name (the default)", tableOrder{Agents: []string{"broken", "hostile", "spinner", "tools"}, Skills: all})
	click("errors")
	order("most errors first", tableOrder{Agents: []string{"hostile", "spinner", "broken", "tools"}, Skills: map[string][]string{
		"broken": {}, "hostile": {"trap", "fail", "grow", "hostile-echo", "huge-output", "loop", "recurse"},
		"spinner": {"spin", "spin-echo"}, "tools": {"echo", "strict-echo"}}})
	click("errors")
	order("fewest errors first", tableOrder{Agents: []string{"broken", "tools", "spinner", "hostile"}, Skills: map[string][]string{
		"broken": {}, "hostile": {"huge-output", "loop", "recurse", "fail", "grow", "hostile-echo", "trap"},
		"spinner": {"spin-echo", "spin"}, "tools": {"echo", "strict-echo"}}})
	click("state")
	order("by state: problems first", tableOrder{Agents: []string{"broken", "hostile", "spinner", "tools"}, Skills: all})
	filter("failed", "")
	order("failed only", tableOrder{Agents: []string{"broken"}, Skills: map[string][]string{"broken": {}}})
	filter("errors", "")
	order("skills with errors", tableOrder{Agents: []string{"hostile", "spinner"}, Skills: map[string][]string{
		"hostile": {"fail", "grow", "hostile-echo", "trap"}, "spinner": {"spin"}}})
	filter("limited", "")
	order("rate-limited skills", tableOrder{Agents: []string{"hostile"}, Skills: map[string][]string{"hostile": {"hostile-echo"}}})
	filter("all", "echo")
	order("names with echo", tableOrder{Agents: []string{"hostile", "spinner", "tools"}, Skills: map[string][]string{
		"hostile": {"hostile-echo"}, "spinner": {"spin-echo"}, "tools": {"echo", "strict-echo"}}})
	filter("all", "")
	click("name")
	order("back to all, by name", tableOrder{Agents: []string{"broken", "hostile", "spinner", "tools"}, Skills: all})
}

// screenshots checks that the page fits a 1400 px and a 1280 px wide
// window without sideways scrolling, and writes dashboard.png (1400 wide,
// the whole page) and dashboard-laptop.png (1280×800, what a laptop shows)
// into $SKILLHOST_UI_SCREENSHOTS (else a temporary folder).
func screenshots(t *testing.T, browser context.Context) {
	t.Helper()
	dir := os.Getenv("SKILLHOST_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, s := range []struct {
		file          string
		width, height int64
		full          bool
	}{{"dashboard.png", 1400, 1000, true}, {"dashboard-laptop.png", 1280, 800, false}} {
		if err := chromedp.Do(browser, chromedp.EmulateViewport(s.width, s.height)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(browser, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
			t.Fatal(err)
		}
		// Nothing sticks out on the right: no sideways scrolling, no table,
		// chart or tile wider than the window.
		waitPage(t, browser, fmt.Sprintf("the page laid out %d px wide", s.width), fmt.Sprintf(`window.innerWidth === %d && window.scrollY === 0 &&
			document.documentElement.scrollWidth <= window.innerWidth &&
			[...document.querySelectorAll("header, main section, table, .chart-card, .tile")].every((e) => e.getBoundingClientRect().right <= window.innerWidth + 0.5)`, s.width))
		shot := chromedp.CaptureScreenshot()
		if s.full {
			shot = chromedp.FullScreenshot(100)
		}
		png, err := chromedp.Run(browser, shot)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, s.file)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("dashboard screenshot: %s (%d bytes)", path, len(png))
	}
}

// TestDashboardNotReady: a plugin none of whose instances can start (the
// sandbox memory budget holds another plugin's warm instance, min_instances,
// not its own)
// is shown "not ready" with why, not a green "loaded", and the header says
// the host is degraded. Not parallel: Chromium takes a core.
func TestDashboardNotReady(t *testing.T) {
	dir := t.TempDir()
	mustPlugin(t, dir, "big-a", warmBigManifest("big-a"))
	mustPlugin(t, dir, "big-b", bigManifest("big-b"))
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		c.Sandbox.MaxLiveBytes = 400 * config.MiB
		c.Policy.QueueWait = 1
		c.Policy.MaxMinInstances = 1
	})
	mustWarm(t, th, "big-a")
	sid := th.mustSession(t)
	wantError(t, th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "big-b-echo"}), -32106, "pool_saturated")
	browser := mustBrowser(t)
	if err := chromedp.Do(browser, chromedp.Navigate(th.URL+"/ui/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, browser, "big-b not ready", `document.querySelector('#agents tr.agent[data-plugin="big-b"] .state')?.textContent === "not ready" &&
		document.querySelector('#agents tr.agent[data-plugin="big-a"] .state')?.textContent === "loaded" &&
		document.querySelector('#agents tr.problem-row[data-plugin="big-b"]')?.textContent.includes("no instance has started") &&
		document.getElementById("health").textContent === "degraded" &&
		document.getElementById("health-detail").textContent.includes("big-b (not ready)") &&
		document.querySelector('#problem-list li[data-plugin="big-b"]') !== null`)
	color, err := chromedp.Run(browser, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('#agents tr.agent[data-plugin="big-b"] .state')).backgroundColor`))
	if err != nil {
		t.Fatal(err)
	}
	loaded, _ := chromedp.Run(browser, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('#agents tr.agent[data-plugin="big-a"] .state')).backgroundColor`))
	if color == loaded {
		t.Errorf("the not-ready badge has the loaded badge's colour %s", color)
	}
}
