package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/skillhost/skillhost/host/config"
)

func TestLoadDirReportsBrokenPluginsAndLoadsTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	pluginSpec{name: "beta"}.write(t, root)
	pluginSpec{name: "alpha", version: "2.0.0", extra: "limits: {timeout: 3s, memory: 2MiB}"}.write(t, root)
	broken := pluginSpec{name: "Broken", skills: "  - {id: broken, description: d}\n"}.write(t, root)
	mustWrite(t, filepath.Join(root, "notes", "README.md"), "not a plugin")
	unbuilt := filepath.Join(root, "unbuilt")
	mustWrite(t, filepath.Join(unbuilt, ManifestFile), pluginSpec{name: "unbuilt"}.manifest())

	r := newTestRegistry(t, config.Policy{})
	var seen []uint64
	r.OnChange(func(s *Snapshot) { seen = append(seen, s.Revision) })
	err := r.LoadDir(ctx, root)
	want := []string{
		filepath.Join(broken, ManifestFile) + ": name: must match [a-z0-9][a-z0-9-]*",
		filepath.Join(unbuilt, ManifestFile) + ": wasm: " + filepath.Join(unbuilt, "plugin.wasm") + " not found (build it: skillhost plugin build " + unbuilt + ")",
	}
	if diff := cmp.Diff(want, errLines(err)); diff != "" {
		t.Errorf("LoadDir error (-want +got):\n%s", diff)
	}
	snap := r.Snapshot()
	var names []string
	for _, p := range snap.Plugins {
		names = append(names, p.Manifest.Name+"@"+p.Manifest.Version)
	}
	if diff := cmp.Diff([]string{"alpha@2.0.0", "beta@1.0.0"}, names); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	var paths []string
	for _, p := range r.Problems() {
		paths = append(paths, p.Path)
		if p.Time.IsZero() || p.Message == "" {
			t.Errorf("problem without time or message: %+v", p)
		}
	}
	if diff := cmp.Diff([]string{broken, unbuilt}, paths); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if snap.Revision != 1 || !cmp.Equal(seen, []uint64{1}) {
		t.Errorf("revision %d, OnChange saw %v; want 1, [1]", snap.Revision, seen)
	}

	alpha, ok := snap.Plugin("alpha")
	if !ok {
		t.Fatal("Plugin(alpha) not found")
	}
	wantLimits := alpha.Limits
	if wantLimits.Timeout != 3*time.Second || wantLimits.MemoryBytes != 2<<20 || wantLimits.OutputBytes != 1<<20 ||
		wantLimits.Concurrency != 4 || wantLimits.MinInstances != 0 || wantLimits.IdleTimeout != time.Minute || wantLimits.QueueWait != 100*time.Millisecond {
		t.Errorf("effective limits = %+v", wantLimits)
	}
	sum := sha256.Sum256(mustRead(t, fixture("hostile")))
	if alpha.WasmSHA256 != hex.EncodeToString(sum[:]) || !alpha.Info.HasExport("echo") || alpha.LoadedAt.IsZero() {
		t.Errorf("plugin metadata: sha %s, exports %v", alpha.WasmSHA256, alpha.Info.Exports)
	}
	p, sk, ok := snap.Skill("alpha-echo")
	if !ok || p != alpha || sk.Function != "echo" {
		t.Errorf("Skill(alpha-echo) = %v, %v, %v", p, sk, ok)
	}

	out, err := r.Execute(ctx, Call{SkillID: "alpha-echo", Input: []byte(`{"text":"hi"}`)})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if string(out.Output) != `{"text":"hi"}` || out.Plugin != "alpha" || out.Version != "2.0.0" || out.SkillID != "alpha-echo" || out.Duration <= 0 {
		t.Errorf("outcome = %+v (output %q)", out, out.Output)
	}

	// A rescan of an unchanged folder changes nothing and recompiles nothing.
	if err := r.Reload(ctx); err == nil {
		t.Error("Reload forgot the problems")
	}
	if again := r.Snapshot(); again != snap {
		t.Errorf("unchanged rescan produced revision %d", again.Revision)
	}
}

func TestLoadRefusals(t *testing.T) {
	t.Parallel()
	wasm := mustRead(t, fixture("hostile"))
	sum := sha256.Sum256(wasm)
	good := hex.EncodeToString(sum[:])
	tests := []struct {
		name string
		pol  config.Policy
		spec pluginSpec
		want string // after "<dir>/plugin.yaml: "
	}{
		{"sha256 pinned", config.Policy{}, pluginSpec{name: "p", extra: "sha256: " + good}, ""},
		{"sha256 mismatch", config.Policy{}, pluginSpec{name: "p", extra: "sha256: " + strings.Repeat("ab", 32)},
			"sha256: plugin.wasm has SHA-256 " + good + ", the manifest pins " + strings.Repeat("ab", 32)},
		{"oversized module", config.Policy{MaxModuleBytes: 512}, pluginSpec{name: "p"},
			"wasm: plugin.wasm is 740B, over the 512B cap"},
		{"policy memory", config.Policy{}, pluginSpec{name: "p", extra: "limits: {memory: 512MiB}"},
			"limits.memory: 512MiB exceeds the operator's max 256MiB"},
		{"missing export", config.Policy{}, pluginSpec{name: "p", skills: "  - {id: nope, description: d}\n"},
			`skills[0].function: "nope" is not exported by plugin.wasm`},
		{"missing events export", config.Policy{}, pluginSpec{name: "p", extra: "events: {function: on_event}"},
			`events.function: "on_event" is not exported by plugin.wasm`},
		{"missing import", config.Policy{}, pluginSpec{name: "p", module: "hostcall", skills: "  - {id: probe, description: d}\n"},
			"wasm: plugin.wasm: loading plugin \"p\": invalid wasm module: imports not provided by the host: extism:host/user.probe"},
		{"2^32-1 locals", config.Policy{}, pluginSpec{name: "p", module: "shape/locals_4g", skills: "  - {id: run, description: d}\n"},
			"wasm: plugin.wasm: invalid wasm module: section 10: function 0 declares 4294967295 locals, over the sandbox limit of 50000"},
		{"memory below declared minimum", config.Policy{}, pluginSpec{name: "p", module: "big_decl", extra: "limits: {memory: 1MiB}", skills: "  - {id: run, description: d}\n"},
			"wasm: plugin.wasm: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := tt.spec.write(t, root)
			r := newTestRegistry(t, tt.pol)
			err := r.LoadDir(context.Background(), root)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("LoadDir: %v", err)
				}
				return
			}
			prefix := filepath.Join(dir, ManifestFile) + ": " + tt.want
			if err == nil || !strings.HasPrefix(err.Error(), prefix) {
				t.Fatalf("LoadDir error\n got: %v\nwant: %s", err, prefix)
			}
			if len(r.Snapshot().Plugins) != 0 || len(r.Problems()) != 1 {
				t.Errorf("refused plugin loaded or not reported: %+v", r.Snapshot())
			}
		})
	}
}

func TestSkillCollisionRefusesTheLaterPlugin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	skills := "  - {id: shout, description: d, function: echo}\n"
	pluginSpec{name: "first", skills: skills}.write(t, root)
	second := pluginSpec{name: "second", skills: "  - {id: mine, description: d, function: echo}\n" + skills}.write(t, root)
	pluginSpec{folder: "third", name: "first", skills: "  - {id: other, description: d, function: echo}\n"}.write(t, root)

	r := newTestRegistry(t, config.Policy{})
	err := r.LoadDir(ctx, root)
	want := []string{
		filepath.Join(second, ManifestFile) + `: skills[1].id: "shout" is already provided by plugin "first" (` + filepath.Join(root, "first") + `); plugin "second" is refused`,
		filepath.Join(root, "third", ManifestFile) + `: name: "first" is already used by the plugin in ` + filepath.Join(root, "first") + "; this plugin is refused",
	}
	if diff := cmp.Diff(want, errLines(err)); diff != "" {
		t.Errorf("LoadDir error (-want +got):\n%s", diff)
	}
	out, err := r.Execute(ctx, Call{SkillID: "shout", Input: []byte(`{}`)})
	if err != nil || out.Plugin != "first" {
		t.Fatalf("shout served by %v, %v; want first", out, err)
	}
	if _, err := r.Execute(ctx, Call{SkillID: "mine"}); err == nil {
		t.Error("a skill of the refused plugin is callable")
	}
}

func TestPathGrants(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	mustWrite(t, filepath.Join(data, "f.txt"), "x")
	tests := []struct {
		name   string
		pol    config.Policy
		mounts string
		want   string // "" = loads
	}{
		{"read-only mount", config.Policy{AllowedPathPrefixes: []string{data}}, data, ""},
		{"refused by default", config.Policy{}, data, "permissions.allowed_paths[\"/data\"]: host path " + data + " is outside the operator's allowed prefixes (policy.allowed_path_prefixes)"},
		{"read-write unsupported", config.Policy{AllowedPathPrefixes: []string{data}, AllowWritablePaths: true}, data + ":rw",
			"permissions.allowed_paths: /data: read-write mounts are not supported by this host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := pluginSpec{name: "m", extra: "permissions: {allowed_paths: {/data: '" + tt.mounts + "'}}"}.write(t, root)
			r := newTestRegistry(t, tt.pol)
			err := r.LoadDir(context.Background(), root)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := served(r, "m-echo"); got != "m@1.0.0" {
					t.Errorf("m-echo served by %s", got)
				}
				return
			}
			if want := filepath.Join(dir, ManifestFile) + ": " + tt.want; err == nil || err.Error() != want {
				t.Errorf("LoadDir error\n got: %v\nwant: %s", err, want)
			}
		})
	}
}

// TestLoadOneFolder: Load loads a single plugin folder (no parent root
// needed), reports its own error, refuses a name another folder holds, and
// picks up a change when called again.
func TestLoadOneFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRegistry(t, config.Policy{})
	one := pluginSpec{name: "solo", version: "1.0.0"}.write(t, t.TempDir())
	p, err := r.Load(ctx, one)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if p.Manifest.Name != "solo" || p.Dir != one {
		t.Errorf("loaded %s from %s, want solo from %s", p.Manifest.Name, p.Dir, one)
	}
	if _, err := r.Execute(ctx, Call{SkillID: "solo-echo", Input: []byte(`"hi"`)}); err != nil {
		t.Errorf("Execute after Load: %v", err)
	}

	broken := pluginSpec{name: "Broken", skills: "  - {id: broken, description: d}\n"}.write(t, t.TempDir())
	_, err = r.Load(ctx, broken)
	if diff := cmp.Diff([]string{filepath.Join(broken, ManifestFile) + ": name: must match [a-z0-9][a-z0-9-]*"}, errLines(err)); diff != "" {
		t.Errorf("Load of a broken folder (-want +got):\n%s", diff)
	}

	twin := pluginSpec{name: "solo", skills: "  - {id: other, description: d, function: echo}\n"}.write(t, t.TempDir())
	if _, err := r.Load(ctx, twin); err == nil || !strings.Contains(err.Error(), `"solo" is already used`) {
		t.Errorf("Load of a second plugin named solo = %v, want a name collision", err)
	}

	pluginSpec{name: "solo", version: "1.1.0"}.write(t, filepath.Dir(one))
	if p, err = r.Load(ctx, one); err != nil || p.Manifest.Version != "1.1.0" {
		t.Errorf("Load after a change = %v, %v; want version 1.1.0", p, err)
	}
}
