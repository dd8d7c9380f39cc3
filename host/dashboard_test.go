package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// load is the hostile traffic the dashboard test sends: calls per skill,
// and the reason each one fails with ("" = success).
var load = []struct {
	skill  string
	calls  int
	reason string
}{
	{"echo", 24, ""},
	{"trap", 3, "trap"},
	{"grow", 2, "memory_limit"},
	{"fail", 2, "plugin_error"},
	{"spin", 2, "timeout"},
	{"no-such-skill", 2, "unknown_skill"},
}

// pluginOf is the plugin of each loaded skill of the test.
var pluginOf = map[string]string{"echo": "tools", "trap": "hostile", "grow": "hostile", "fail": "hostile", "spin": "spinner"}

// limitedCalls are the calls of hostile-echo past its policy.skill_rates
// rule (rateLimited calls an hour, per key) that the dashboard test makes.
const (
	rateLimited  = 4
	limitedCalls = 2
)

// TestDashboardUnderHostileLoad drives timeouts, traps, memory hogs,
// plugin errors, unknown skills and calls past a skill's rate next to
// normal calls and a plan, with a plugin folder that fails to load, then
// checks that the admin documents, /metrics, the access log and the
// dashboard in headless Chromium all show the same counts and reasons, that
// the page's charts are drawn from them, that its tables sort and filter,
// and that it fits a laptop's width. It writes two screenshots into
// $SKILLHOST_UI_SCREENSHOTS (else a temporary folder): dashboard.png
// (1400 wide, the whole page) and dashboard-laptop.png (1280×800). Not
// parallel: Chromium takes a core, so the package's other tests wait.
func TestDashboardUnderHostileLoad(t *testing.T) {
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	mustPlugin(t, dir, "hostile", hostileManifest)
	mustPlugin(t, dir, "spinner", spinnerManifest)
	mustBrokenPlugin(t, dir, "broken")
	publisher := mustPublisher(t)
	if _, err := plugin.SignFolder(filepath.Join(dir, "tools"), publisher, 64<<20); err != nil {
		t.Fatal(err)
	}
	ops := newKey(t, "ops", "*")
	th, logs := mustHostWith(t, dir, func(c *config.Config) {
		c.Auth.Keys = []config.AuthKey{ops.Entry}
		c.Policy.SkillRates = []config.SkillRate{{Skill: "hostile-echo", Rate: fmt.Sprintf("%d/h", rateLimited)}}
		// Six echo workers share tools' four instances: a call waits for one
		// rather than fail with pool_saturated when a slow (-race, loaded CI)
		// instance start holds a slot past the default 100ms. Saturation has
		// its own tests; this one counts the other reasons.
		c.Policy.QueueWait = 30 * time.Second
	})
	sid, _ := th.mustAs(t, ops.Secret, "_cleveragents/session/create", map[string]any{"session_id": "dash"})["session_id"].(string)

	browser := mustBrowser(t)
	// Keys are configured: the page asks for one, then reads the documents
	// and follows the event stream with it.
	if err := chromedp.Do(browser,
		chromedp.Navigate(th.URL+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#key-form")),
		chromedp.SendKeys(chromedp.CSS("#key"), ops.Secret),
		chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)),
	); err != nil {
		t.Fatal(err)
	}
	waitPage(t, browser, "the event stream followed", `document.getElementById("plans-state").textContent.startsWith("Following")`)

	// execute calls skill and returns the reason it failed with ("" on
	// success); safe from any goroutine.
	execute := func(skill string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		r, err := send(ctx, httpClient, th.URL+"/rpc", map[string]string{"Authorization": "Bearer " + ops.Secret},
			rpcBody("_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": skill, "skill_params": map[string]any{"text": "hi"}}))
		switch {
		case err != nil:
			return "transport: " + err.Error()
		case r.RPC.Error == nil:
			return ""
		}
		return r.RPC.Error.reason()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []string
	for _, l := range load {
		workers := 1 // spin: one at a time, so its 2 instances never saturate
		if l.skill != "spin" {
			workers = min(l.calls, 6)
		}
		var next atomic.Int64
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(l.calls) {
					if reason := execute(l.skill); reason != l.reason {
						mu.Lock()
						wrong = append(wrong, fmt.Sprintf("%s: reason %q, want %q", l.skill, reason, l.reason))
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	// hostile-echo is limited: the calls past its rate are refused.
	for i := range rateLimited + limitedCalls {
		want := ""
		if i >= rateLimited {
			want = "rate_limited"
		}
		if reason := execute("hostile-echo"); reason != want {
			wrong = append(wrong, fmt.Sprintf("hostile-echo call %d: reason %q, want %q", i+1, reason, want))
		}
	}
	// Requests refused before a method runs count too.
	for _, body := range []string{`{not json`, `{"jsonrpc":"2.0","id":1,"method":"no/such/method"}`} {
		r, err := send(context.Background(), httpClient, th.URL+"/rpc", map[string]string{"Authorization": "Bearer " + ops.Secret}, []byte(body))
		if err != nil || r.RPC.Error == nil {
			t.Fatalf("%s: %v %s", body, err, r.Body)
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("calls ended differently than expected:\n%s", strings.Join(wrong, "\n"))
	}
	runPlan(t, th, ops.Secret, sid)

	// The admin status counts each call of a loaded skill, and its reason.
	var status struct {
		Skills []struct {
			Plugin, Skill string
			Calls         int
			Errors        map[string]int
		} `json:"skills"`
		Pool struct {
			Plugins []struct {
				Plugin    string
				Instances struct{ Discarded int }
			}
		} `json:"pool"`
	}
	mustGetJSON(t, th, ops.Secret, "/admin/status", &status)
	type counts struct {
		Calls  int
		Errors map[string]int
	}
	want, got := map[string]counts{}, map[string]counts{}
	for _, l := range load {
		if p, ok := pluginOf[l.skill]; ok {
			c := counts{Calls: l.calls, Errors: map[string]int{}}
			if l.reason != "" {
				c.Errors[l.reason] = l.calls
			}
			want[p+"/"+l.skill] = c
		}
	}
	want["tools/echo"] = counts{Calls: want["tools/echo"].Calls + 2, Errors: map[string]int{}} // the plan's two steps
	want["hostile/hostile-echo"] = counts{Calls: rateLimited + limitedCalls, Errors: map[string]int{"rate_limited": limitedCalls}}
	for _, s := range status.Skills {
		got[s.Plugin+"/"+s.Skill] = counts{Calls: s.Calls, Errors: s.Errors}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/admin/status skills (-want +got):\n%s", diff)
	}
	discarded := map[string]int{}
	for _, p := range status.Pool.Plugins {
		discarded[p.Plugin] = p.Instances.Discarded
	}
	// a trap, a memory failure or a timeout discards its instance; a
	// plugin-reported error keeps it
	if diff := cmp.Diff(map[string]int{"tools": 0, "hostile": 3 + 2, "spinner": 2}, discarded); diff != "" {
		t.Errorf("discarded instances (-want +got):\n%s", diff)
	}

	// Every failure is in the ring with its reason, the unknown skills too.
	var failures struct {
		Total    int
		Failures []struct {
			Reason, Skill, Method string
			KeyID                 string `json:"key_id"`
		}
	}
	mustGetJSON(t, th, ops.Secret, "/admin/failures", &failures)
	byReason := map[string]int{}
	wantMethod := map[string]string{"parse_error": "", "unknown_method": "no/such/method"}
	for _, f := range failures.Failures {
		byReason[f.Reason]++
		method, ok := wantMethod[f.Reason]
		if !ok {
			method = "_cleveragents/skill/execute"
		}
		if f.KeyID != "ops" || f.Method != method {
			t.Errorf("failure not attributed: %+v", f)
		}
	}
	wantReasons := map[string]int{"parse_error": 1, "unknown_method": 1, "rate_limited": limitedCalls}
	for _, l := range load {
		if l.reason != "" {
			wantReasons[l.reason] = l.calls
		}
	}
	if diff := cmp.Diff(wantReasons, byReason); diff != "" || failures.Total != len(failures.Failures) {
		t.Errorf("/admin/failures by reason (-want +got):\n%s (total %d)", diff, failures.Total)
	}

	// /metrics agrees, and its skillhost_ families are the metrics reference's list.
	families := mustMetrics(t, th, ops.Secret)
	for _, l := range load {
		p, ok := pluginOf[l.skill]
		if !ok || l.reason == "" {
			continue
		}
		labels := map[string]string{"plugin": p, "skill": l.skill, "reason": l.reason}
		if v := sample(families, "skillhost_skill_errors_total", labels); v != float64(l.calls) {
			t.Errorf("skillhost_skill_errors_total%v = %v, want %d", labels, v, l.calls)
		}
	}
	for _, reason := range []string{"parse_error", "unknown_method"} {
		if v := sample(families, "skillhost_rpc_rejected_total", map[string]string{"reason": reason}); v != 1 {
			t.Errorf("skillhost_rpc_rejected_total{reason=%q} = %v, want 1", reason, v)
		}
	}
	limitedLabels := map[string]string{"plugin": "hostile", "skill": "hostile-echo", "rule": "hostile-echo", "per": "key"}
	if v := sample(families, "skillhost_skill_rate_limited_total", limitedLabels); v != limitedCalls {
		t.Errorf("skillhost_skill_rate_limited_total%v = %v, want %d", limitedLabels, v, limitedCalls)
	}
	if v := sample(families, "skillhost_plugin_instances_discarded_total", map[string]string{"plugin": "hostile"}); v != 5 {
		t.Errorf("skillhost_plugin_instances_discarded_total{hostile} = %v, want 5", v)
	}
	if v := sample(families, "skillhost_plugin_memory_peak_bytes", map[string]string{"plugin": "hostile"}); v < 32<<20 {
		t.Errorf("hostile's memory high-water %v, want at least its 32MiB cap (grow hit it)", v)
	}
	var exposed []string
	for name := range families {
		if strings.HasPrefix(name, "skillhost_") {
			exposed = append(exposed, name)
		}
	}
	sort.Strings(exposed)
	if diff := cmp.Diff(docMetrics(t), exposed); diff != "" {
		t.Errorf("%s and /metrics differ (-doc +exposed):\n%s", metricsDoc, diff)
	}

	// One access line per call, with the skill it reached and its reason.
	access := map[string]int{}
	for _, line := range logs.lines(`"msg":"access"`, `"key_id":"ops"`, `"status":"error"`) {
		var rec struct{ Skill, Reason, Status string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		access[rec.Skill+" "+rec.Reason]++
	}
	wantAccess := map[string]int{" parse_error": 1, " unknown_method": 1, "hostile-echo rate_limited": limitedCalls}
	for _, l := range load {
		if l.reason == "" {
			continue
		}
		skill := l.skill
		if _, ok := pluginOf[skill]; !ok {
			skill = "" // an unknown skill is not named: it comes from the client
		}
		wantAccess[skill+" "+l.reason] += l.calls
	}
	if diff := cmp.Diff(wantAccess, access); diff != "" {
		t.Errorf("access lines by skill and reason (-want +got):\n%s", diff)
	}
	// A successful call's line names the skill it ran too: the access log
	// reads it from the call's result, nothing writes it into the context.
	okCalls := map[string]int{}
	for _, line := range logs.lines(`"msg":"access"`, `"key_id":"ops"`, `"method":"_cleveragents/skill/execute"`, `"status":"ok"`) {
		var rec struct{ Plugin, Skill string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		okCalls[rec.Plugin+"/"+rec.Skill]++
	}
	wantOK := map[string]int{"hostile/hostile-echo": rateLimited}
	for _, l := range load {
		if p, ok := pluginOf[l.skill]; ok && l.reason == "" {
			wantOK[p+"/"+l.skill] += l.calls
		}
	}
	if diff := cmp.Diff(wantOK, okCalls); diff != "" {
		t.Errorf("successful skill/execute access lines by plugin/skill (-want +got):\n%s", diff)
	}

	// The dashboard shows the same numbers, the failures, the card and the
	// plan.
	// (a poll from before the last call could already show some counts:
	// wait for one that shows every failure and the plan's calls)
	waitPage(t, browser, "the counts on the page", fmt.Sprintf(
		`document.getElementById("sum-failures").textContent === "%d" &&
		 document.querySelectorAll("#failures tbody tr").length === %d &&
		 document.querySelector('#agents tr.skill[data-skill="echo"] .calls')?.textContent === "%d" &&
		 document.querySelector('#plans tr[data-plan="dash-plan"]')?.dataset.status === "completed" &&
		 document.getElementById("card-summary").textContent.includes("skills")`,
		failures.Total, failures.Total, want["tools/echo"].Calls))
	type row struct {
		Calls  string   `json:"calls"`
		Errors []string `json:"errors"`
	}
	page, err := chromedp.Run(browser, chromedp.Evaluate[map[string]row](`Object.fromEntries([...document.querySelectorAll("#agents tr.skill")].map(
		(r) => [r.dataset.plugin + "/" + r.dataset.skill, {calls: r.querySelector(".calls").textContent,
		errors: [...r.querySelectorAll(".reason")].map((e) => e.textContent)}]))`))
	if err != nil {
		t.Fatal(err)
	}
	wantPage := map[string]row{}
	for key, c := range want {
		r := row{Calls: fmt.Sprint(c.Calls), Errors: []string{}}
		for reason, n := range c.Errors {
			r.Errors = append(r.Errors, fmt.Sprintf("%s %d", reason, n))
		}
		wantPage[key] = r
	}
	for _, s := range []string{"tools/strict-echo", "hostile/loop", "hostile/recurse", "hostile/huge-output", "spinner/spin-echo"} {
		wantPage[s] = row{Calls: "0", Errors: []string{}} // loaded, never called
	}
	if diff := cmp.Diff(wantPage, page); diff != "" {
		t.Errorf("dashboard skills (-want +got):\n%s", diff)
	}
	// Each agent names its signer as /admin/plugins does: the signed folder
	// by its publisher's kid (untrusted: the host trusts no publisher here).
	var plugins struct {
		Plugins []struct {
			Name   string  `json:"name"`
			Signer *string `json:"signer"`
		} `json:"plugins"`
	}
	mustGetJSON(t, th, ops.Secret, "/admin/plugins", &plugins)
	wantSigners := map[string]string{}
	for _, p := range plugins.Plugins {
		wantSigners[p.Name] = "unsigned"
		if p.Signer != nil {
			wantSigners[p.Name] = "signed by " + *p.Signer
		}
	}
	kid := publisher.Keys()[0].KeyID()
	if wantSigners["tools"] != "signed by "+kid+" (untrusted)" || wantSigners["hostile"] != "unsigned" || wantSigners["broken"] != "unsigned" {
		t.Errorf("/admin/plugins signers: %v (publisher kid %s)", wantSigners, kid)
	}
	signers, err := chromedp.Run(browser, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll("#agents tr.agent")].map(
		(r) => [r.dataset.plugin, r.querySelector(".signer")?.textContent]))`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantSigners, signers); diff != "" {
		t.Errorf("dashboard signers (-want +got):\n%s", diff)
	}
	// A body that is not JSON names no method; it is not a plan step.
	methods, err := chromedp.Run(browser, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#failures tr[data-reason="parse_error"]')].map((r) => r.cells[1].textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"–"}, methods); diff != "" {
		t.Errorf("method of the parse_error failure (-want +got):\n%s", diff)
	}
	shown, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#failures tbody tr")].map((r) => r.dataset.reason).sort()`))
	if err != nil {
		t.Fatal(err)
	}
	var wantShown []string
	for reason, n := range wantReasons {
		for range n {
			wantShown = append(wantShown, reason)
		}
	}
	sort.Strings(wantShown)
	if diff := cmp.Diff(wantShown, shown); diff != "" {
		t.Errorf("dashboard failures (-want +got):\n%s", diff)
	}

	// The host is degraded (a folder failed to load), and says which.
	waitPage(t, browser, "the degraded health", `document.getElementById("health").textContent === "degraded" &&
		document.getElementById("health-detail").textContent.includes("broken (failed)") &&
		document.querySelector('#problem-list li[data-plugin="broken"]') !== null &&
		document.querySelector('#agents tr.agent[data-plugin="broken"] .state')?.textContent === "failed"`)
	checkCharts(t, browser, th, ops.Secret, map[string]int{"hostile/trap": 3, "hostile/grow": 2, "spinner/spin": 2,
		"hostile/hostile-echo": rateLimited + limitedCalls})
	checkSortAndFilter(t, browser)

	// Live traffic, paced (about 25 calls a second: mostly served, some
	// plugin errors, calls past hostile-echo's rate, now and then a
	// timeout) until it spans three of the history's 10 s buckets, so that
	// the charts show a history; the page shows live rates meanwhile.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(40 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			skill := "echo"
			switch {
			case n%150 == 149:
				skill = "spin"
			case n%20 == 7:
				skill = "fail"
			case n%25 == 3:
				skill = "hostile-echo"
			}
			execute(skill)
		}
	}()
	waitPage(t, browser, "a live call rate and three buckets of history", `parseFloat(document.getElementById("sum-rate").textContent) > 0 &&
		parseFloat(document.querySelector('#agents tr.skill[data-skill="echo"] .rate').textContent) > 0 &&
		document.querySelectorAll('#charts .chart-card[data-skill="tools/echo"] svg.bars g.bucket').length >= 3`)
	screenshots(t, browser)
	close(stop)
	<-done
}
