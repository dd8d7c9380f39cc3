package host_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/devkit"
	"github.com/skillhost/skillhost/host/internal/ocitest"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// adminPlugin is the part of an /admin/plugins entry these tests read.
type adminPlugin struct {
	Name, Version, State, Source, Error string
	Signer                              *string
	OCI                                 *struct {
		Ref, Digest string
		PullError   string `json:"pull_error"`
	}
	Settings *settingsView
}

// settingsView is an /admin/plugins entry's settings.
type settingsView struct {
	Config  []string
	Secrets map[string]string
}

// adminPlugins reads /admin/plugins by plugin name (a failed source: its ref).
func adminPlugins(t *testing.T, th *testHost) map[string]adminPlugin {
	t.Helper()
	_, body := th.get(t, "/admin/plugins")
	var doc struct{ Plugins []adminPlugin }
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("/admin/plugins %s: %v", body, err)
	}
	out := map[string]adminPlugin{}
	for _, p := range doc.Plugins {
		out[p.Name] = p
	}
	return out
}

// pushPlugin writes a plugin folder (hostile.wasm, skill <name>-echo) of
// version and pushes it to ref; it returns the digest.
func pushPlugin(t *testing.T, ref, name, version string, sign ...string) string {
	t.Helper()
	dir := t.TempDir()
	mustPlugin(t, dir, name, strings.Replace(signedManifest(name, name+"-echo"), "1.0.0", version, 1))
	if len(sign) > 0 {
		if _, err := devkit.Sign(filepath.Join(dir, name), sign); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := host.PushPlugin(ctx, filepath.Join(dir, name), ref, host.OCIOptions{PlainHTTP: true})
	if err != nil {
		t.Fatalf("PushPlugin(%s): %v", ref, err)
	}
	return res.Digest
}

// startHost serves cfg (on 127.0.0.1:0) until stop, which waits for Serve
// to return; its logs (JSON lines) are returned.
func startHost(t *testing.T, cfg config.Config) (th *testHost, logs *logBuffer, stop func()) {
	t.Helper()
	logs = &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg, host.WithVersion("9.9.9-test"), host.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	if err != nil {
		cancel()
		t.Fatalf("host.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("Serve did not return 60 s after its context ended")
		}
	}
	t.Cleanup(stop)
	return &testHost{URL: "http://" + h.Addr().String(), Plugins: cfg.Plugins, h: h}, logs, stop
}

func ociConfig(t *testing.T, data string, sources ...config.OCISource) config.Config {
	t.Helper()
	cfg := config.Defaults()
	cfg.Listen, cfg.Data, cfg.Plugins = "127.0.0.1:0", data, t.TempDir()
	cfg.HTTP.ShutdownTimeout = 30 * time.Second
	cfg.Sources.OCI = sources
	return cfg
}

// A plugin of sources.oci is pulled and served; when its tag moves, the new
// revision replaces it (poll); when the registry goes away, the revision
// pulled last keeps serving, shown with the pull error — also after a
// restart with the registry still down. A reference by digest serves that
// revision whatever the tag says.
func TestOCISourceFollowsTagAndOutlivesRegistry(t *testing.T) {
	t.Parallel()
	reg := ocitest.Start(t)
	tag := reg.Host + "/team/tools:stable"
	v1 := pushPlugin(t, tag, "tools", "1.0.0")
	pinned := reg.Host + "/team/pinned@" + pushPlugin(t, reg.Host+"/team/pinned:1", "pinned", "1.0.0")
	data := t.TempDir()
	cfg := ociConfig(t, data, config.OCISource{Ref: tag, PlainHTTP: true, Poll: time.Second}, config.OCISource{Ref: pinned, PlainHTTP: true})
	th, logs, stop := startHost(t, cfg)

	got := adminPlugins(t, th)
	if p := got["tools"]; p.State != "loaded" || p.Source != "oci" || p.Version != "1.0.0" || p.OCI == nil || p.OCI.Ref != tag || p.OCI.Digest != v1 {
		t.Fatalf("tools after start = %+v (oci %+v), want loaded 1.0.0 from %s at %s", p, p.OCI, tag, v1)
	}
	if p := got["pinned"]; p.State != "loaded" || p.OCI == nil || p.OCI.Ref != pinned {
		t.Fatalf("pinned after start = %+v", p)
	}
	session := th.mustSession(t)
	execute := func(th *testHost, skill string) {
		t.Helper()
		th.mustResult(t, "_cleveragents/skill/execute", map[string]any{"session_id": session, "skill_id": skill, "skill_params": map[string]any{"x": 1}})
	}
	execute(th, "tools-echo")

	v2 := pushPlugin(t, tag, "tools", "2.0.0")
	pushPlugin(t, reg.Host+"/team/pinned:1", "pinned", "3.0.0") // the tag moves; the digest does not
	testutil.Eventually(t, 60*time.Second, "the moved tag is pulled and loaded (poll 1s)", func() bool { return adminPlugins(t, th)["tools"].Version == "2.0.0" })
	if p := adminPlugins(t, th); p["tools"].OCI.Digest != v2 || p["pinned"].Version != "1.0.0" {
		t.Errorf("after the tag moved: tools %+v, pinned %+v", p["tools"].OCI, p["pinned"])
	}

	reg.Close()
	testutil.Eventually(t, 60*time.Second, "the failed pull is shown", func() bool { return adminPlugins(t, th)["tools"].OCI.PullError != "" })
	p := adminPlugins(t, th)["tools"]
	if p.State != "loaded" || p.Version != "2.0.0" || !strings.Contains(p.Error, "pull of "+tag+" failed (the pulled revision keeps serving)") {
		t.Errorf("tools with the registry gone = %+v", p)
	}
	execute(th, "tools-echo")
	if len(logs.lines("oci: pull failed; the pulled revision keeps serving", tag)) == 0 {
		t.Errorf("no log line for the failed pull:\n%s", logs)
	}
	stop()

	th, _, _ = startHost(t, ociConfig(t, data, cfg.Sources.OCI...))
	got = adminPlugins(t, th)
	if p := got["tools"]; p.State != "loaded" || p.Version != "2.0.0" || p.OCI.Digest != v2 || p.OCI.PullError == "" {
		t.Errorf("tools after a restart with the registry down = %+v (oci %+v)", p, p.OCI)
	}
	if p := got["pinned"]; p.State != "loaded" || p.Version != "1.0.0" || p.OCI.PullError != "" {
		t.Errorf("pinned after a restart with the registry down = %+v (a digest on disk needs no registry)", p)
	}
	session = th.mustSession(t)
	execute(th, "tools-echo")
}

// A plugin from a registry is held to trust exactly as a folder: signed by
// a trusted publisher it is served (and shown signed), unsigned it is
// refused under trust.require_signatures; a source never pulled is listed
// failed with its pull error.
func TestOCISourceTrust(t *testing.T) {
	t.Parallel()
	reg := ocitest.Start(t)
	alice := mustKeygen(t, t.TempDir(), "alice.key", "ed25519")
	signed, unsigned, missing := reg.Host+"/team/signed:1", reg.Host+"/team/unsigned:1", reg.Host+"/team/missing:1"
	pushPlugin(t, signed, "signed", "1.0.0", alice.Private)
	pushPlugin(t, unsigned, "unsigned", "1.0.0")
	cfg := ociConfig(t, t.TempDir(), config.OCISource{Ref: signed, PlainHTTP: true}, config.OCISource{Ref: unsigned, PlainHTTP: true},
		config.OCISource{Ref: missing, PlainHTTP: true})
	cfg.Trust = config.Trust{RequireSignatures: true, Publishers: []string{alice.Public}}
	th, _, _ := startHost(t, cfg)
	got := adminPlugins(t, th)
	if p := got["signed"]; p.State != "loaded" || p.Signer == nil || *p.Signer != "alice ("+alice.KeyID+")" {
		t.Errorf("signed = %+v, want loaded and signed by alice", p)
	}
	var refused adminPlugin
	for _, p := range got {
		if p.Source == "oci" && p.OCI != nil && p.OCI.Ref == unsigned {
			refused = p
		}
	}
	if refused.State != "failed" || !strings.Contains(refused.Error, "signature") {
		t.Errorf("unsigned under require_signatures = %+v, want failed for its signature", refused)
	}
	if p := got[missing]; p.State != "failed" || p.Source != "oci" || !strings.Contains(p.Error, "pull of "+missing+" failed") {
		t.Errorf("a source never pulled = %+v", p)
	}
	if r := th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": th.mustSession(t), "skill_id": "unsigned-echo", "skill_params": map[string]any{}}); r.Error == nil {
		t.Error("the unsigned plugin's skill answered")
	}
}
