package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
)

// mustConfigEcho writes plugin folder dir/name running testdata/config_echo.wasm
// (skill <name>-get outputs its config value api_key, or null) with the
// manifest's permissions.config set to manifestConfig.
func mustConfigEcho(t *testing.T, dir, name, manifestConfig string) {
	t.Helper()
	wasm, err := os.ReadFile("testdata/config_echo.wasm")
	if err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, name)
	manifest := "name: " + name + "\nversion: 1.0.0\ndescription: echoes its api_key\nwasm: config_echo.wasm\n" +
		"permissions:\n  config: " + manifestConfig + "\nskills:\n  - {id: " + name + "-get, function: get, description: its api_key}\n"
	for file, body := range map[string][]byte{"config_echo.wasm": wasm, "plugin.yaml": []byte(manifest)} {
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pdir, file), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// An operator's secret reaches its plugin through the config host function,
// over the manifest's value; another plugin cannot read it; a secret that
// cannot be read refuses its plugin with an error naming the key. The
// values appear in no log line, admin document (what `status`, `plugins`
// and the dashboard show), card or metric: secrets are shown as set/unset.
func TestOperatorSecrets(t *testing.T) {
	// Not parallel: t.Setenv.
	const envSecret, fileSecret = "s3cr3t-from-env-9f2c", "s3cr3t-from-file-41d7"
	t.Setenv("T26_VAULT_KEY", envSecret)
	secretFile := filepath.Join(t.TempDir(), "filer-key")
	if err := os.WriteFile(secretFile, []byte("  "+fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "absent")
	plugins := t.TempDir()
	mustConfigEcho(t, plugins, "vault", "{api_key: from-manifest, region: eu}")
	mustConfigEcho(t, plugins, "filer", "{}")
	mustConfigEcho(t, plugins, "peeker", "{}")
	mustConfigEcho(t, plugins, "locked", "{}")
	th, logs := mustHostWith(t, plugins, func(c *config.Config) {
		c.PluginSettings = map[string]config.PluginSettings{
			"vault":  {Config: map[string]string{"units": "metric"}, Secrets: map[string]string{"api_key": "env:T26_VAULT_KEY"}},
			"filer":  {Secrets: map[string]string{"api_key": "file:" + secretFile}},
			"locked": {Secrets: map[string]string{"api_key": "file:" + missing, "other": "env:T26_NOT_SET"}},
		}
	})
	session := th.mustSession(t)
	get := func(skill string) any {
		t.Helper()
		out := th.mustResult(t, "_cleveragents/skill/execute", map[string]any{"session_id": session, "skill_id": skill, "skill_params": map[string]any{}})
		return out["output"]
	}
	for skill, want := range map[string]any{"vault-get": envSecret, "filer-get": fileSecret, "peeker-get": nil} {
		if got := get(skill); got != want {
			t.Errorf("%s read api_key %v, want %v", skill, got, want)
		}
	}
	wantError(t, th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": session, "skill_id": "locked-get", "skill_params": map[string]any{}}), -32602)

	got := adminPlugins(t, th)
	for name, want := range map[string]any{
		"vault":  &settingsView{[]string{"units"}, map[string]string{"api_key": "set"}},
		"filer":  &settingsView{[]string{}, map[string]string{"api_key": "set"}},
		"locked": &settingsView{[]string{}, map[string]string{"api_key": "unset", "other": "unset"}},
	} {
		if diff := cmp.Diff(want, got[name].Settings); diff != "" {
			t.Errorf("%s settings (-want +got):\n%s", name, diff)
		}
	}
	if got["peeker"].Settings != nil {
		t.Errorf("peeker has settings %+v", got["peeker"].Settings)
	}
	if p := got["locked"]; p.State != "failed" || !strings.Contains(p.Error, "plugins.locked.secrets.api_key: secret file: open "+missing) ||
		!strings.Contains(p.Error, "plugins.locked.secrets.other: environment variable T26_NOT_SET is not set") {
		t.Errorf("locked = %+v, want failed naming both keys", p)
	}

	// Everything an operator or a client can read, searched for the values.
	var seen strings.Builder
	for _, path := range []string{"/admin/plugins", "/admin/status", "/admin/pool", "/admin/failures", "/metrics",
		agentcard.WellKnownPath, agentcard.AgentCardPath("vault"), agentcard.AgentCardPath("filer"), "/ui/", "/ui/app.js"} {
		resp, body := th.get(t, path)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		seen.WriteString(path + "\n" + string(body) + "\n")
	}
	seen.WriteString(logs.String())
	for _, secret := range []string{envSecret, fileSecret} {
		if i := strings.Index(seen.String(), secret); i >= 0 {
			t.Errorf("the secret %q appears in what the host shows or logs: …%s…", secret, seen.String()[max(0, i-300):i+len(secret)])
		}
	}
	if !strings.Contains(seen.String(), `"secrets":{"api_key":"set"}`) {
		t.Error("the admin documents do not show the secret as set")
	}
}

// The dashboard shows a plugin's settings, with secrets as set or unset;
// the rendered page never holds a secret's value.
func TestDashboardShowsSettingsNotSecrets(t *testing.T) {
	t.Parallel()
	const secret = "dash-s3cr3t-77c0"
	secretFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	mustConfigEcho(t, plugins, "vault", "{}")
	mustConfigEcho(t, plugins, "locked", "{}")
	th, _ := mustHostWith(t, plugins, func(c *config.Config) {
		c.PluginSettings = map[string]config.PluginSettings{
			"vault":  {Config: map[string]string{"units": "metric"}, Secrets: map[string]string{"api_key": "file:" + secretFile}},
			"locked": {Secrets: map[string]string{"api_key": "env:T26_DASH_UNSET"}},
		}
	})
	browser := mustBrowser(t)
	if err := chromedp.Do(browser, chromedp.Navigate(th.URL+"/ui/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, browser, "the plugins' settings", `[...document.querySelectorAll(".settings")].length == 2`)
	text, err := chromedp.Run(browser, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"config units; secrets api_key set", "secrets api_key unset",
		"plugins.locked.secrets.api_key: environment variable T26_DASH_UNSET is not set"} {
		if !strings.Contains(text, want) {
			t.Errorf("the dashboard lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, secret) {
		t.Errorf("the dashboard shows the secret:\n%s", text)
	}
}

// A rotated secret file reloads its plugin (hot reload watches the
// secret's folder; the folder's fingerprint holds a keyed digest of the
// settings): the next calls read the new value, with no change in the
// plugin folder. A secret file that appears later loads a plugin refused
// for lack of it. Neither value appears in the logs.
func TestRotatedSecretReloads(t *testing.T) {
	t.Parallel()
	const before, after, late = "rot-s3cr3t-before-5a1e", "rot-s3cr3t-after-c07b", "rot-s3cr3t-late-93d2"
	secrets := t.TempDir()
	rotated, appears := filepath.Join(secrets, "api_key"), filepath.Join(secrets, "late_key")
	writeSecret := func(path, value string) {
		t.Helper()
		tmp := path + ".new" // a rotation as Kubernetes and most tools do it: a rename over the old file
		if err := os.WriteFile(tmp, []byte(value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	writeSecret(rotated, before)
	plugins := t.TempDir()
	mustConfigEcho(t, plugins, "rotor", "{}")
	mustConfigEcho(t, plugins, "latecomer", "{}")
	th, logs := mustHostWith(t, plugins, func(c *config.Config) {
		c.PluginSettings = map[string]config.PluginSettings{
			"rotor":     {Secrets: map[string]string{"api_key": "file:" + rotated}},
			"latecomer": {Secrets: map[string]string{"api_key": "file:" + appears}},
		}
	})
	session := th.mustSession(t)
	read := func(skill string) any {
		r := th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": session, "skill_id": skill, "skill_params": map[string]any{}})
		if r.Error != nil {
			return r.Error.Message
		}
		var out map[string]any
		if err := json.Unmarshal(r.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out["output"]
	}
	if !waitFor(time.Minute, func() bool { return read("rotor-get") == before }) {
		t.Fatalf("rotor-get = %v, want the secret %q", read("rotor-get"), before)
	}
	writeSecret(rotated, after)
	writeSecret(appears, late)
	if !waitFor(time.Minute, func() bool { return read("rotor-get") == after }) {
		t.Errorf("after the rotation rotor-get = %v, want the new secret", read("rotor-get"))
	}
	if !waitFor(time.Minute, func() bool { return read("latecomer-get") == late }) {
		t.Errorf("after its secret file appeared latecomer-get = %v, want the secret", read("latecomer-get"))
	}
	for _, s := range []string{before, after, late} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the secret %q appears in the logs", s)
		}
	}
}
