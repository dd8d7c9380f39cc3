package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/skillhost/skillhost/host/config"
)

const testFile = "plugins/text/plugin.yaml"

// validYAML is a complete manifest; the table tests edit it.
const validYAML = `name: text-tools
version: 1.2.0
description: Text utilities
author: Ada
license: MIT
homepage: https://example.com/text
wasm: text_tools.wasm
sha256: 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08
limits:
  timeout: 2s
  memory: 64MiB
  output: 1MiB
  concurrency: 4
permissions:
  allowed_hosts: [api.example.com, "*.example.org"]
  allowed_paths: {/data: "/srv/data", /cache/: "cache:rw"}
  config: {greeting: hello}
skills:
  - id: uppercase
    name: Uppercase
    description: Upper-cases text
    tags: [text]
    examples: ['{"text":"hi"}', '{ "text" : "yo" }']
    input_modes: [application/json]
    input_schema:
      type: object
      properties: {text: {type: string, maxLength: 10}}
      required: [text]
    output_schema: {type: object}
  - id: count_words
    description: Counts words
    function: wc
`

func mustDecode(t *testing.T, data string) *Manifest {
	t.Helper()
	m, err := DecodeManifest(testFile, []byte(data))
	if err != nil {
		t.Fatalf("DecodeManifest: %v", err)
	}
	return m
}

func TestDecodeManifestValid(t *testing.T) {
	t.Parallel()
	m := mustDecode(t, validYAML)
	absDir, _ := filepath.Abs("plugins/text")
	want := &Manifest{
		Name: "text-tools", Version: "1.2.0", Description: "Text utilities",
		Author: "Ada", License: "MIT", Homepage: "https://example.com/text",
		Wasm: "text_tools.wasm", SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Limits: config.Limits{Timeout: 2 * time.Second, Memory: 64 * config.MiB, Output: config.MiB, Concurrency: 4},
		Permissions: Permissions{
			AllowedHosts: []string{"api.example.com", "*.example.org"},
			AllowedPaths: []PathGrant{
				{GuestPath: "/cache", HostPath: filepath.Join(absDir, "cache"), Writable: true},
				{GuestPath: "/data", HostPath: "/srv/data"},
			},
			Config: map[string]string{"greeting": "hello"},
		},
		Skills: []*Skill{
			{ID: "uppercase", Name: "Uppercase", Description: "Upper-cases text", Tags: []string{"text"},
				Function: "uppercase", Examples: []Example{{Input: json.RawMessage(`{"text":"hi"}`)}, {Input: json.RawMessage(`{"text":"yo"}`)}},
				InputModes:   []string{"application/json"},
				InputSchema:  json.RawMessage(`{"properties":{"text":{"maxLength":10,"type":"string"}},"required":["text"],"type":"object"}`),
				OutputSchema: json.RawMessage(`{"type":"object"}`)},
			{ID: "count_words", Name: "count_words", Description: "Counts words", Function: "wc"},
		},
		Dir: "plugins/text", File: testFile,
	}
	if diff := cmp.Diff(want, m, cmpopts.IgnoreUnexported(Skill{})); diff != "" {
		t.Errorf("manifest mismatch (-want +got):\n%s", diff)
	}
	if m.Skills[0].input == nil || m.Skills[0].output == nil || m.Skills[1].input != nil {
		t.Error("schemas not compiled as declared")
	}
	if m.Events != nil {
		t.Errorf("events %+v without an events section", m.Events)
	}
	m = mustDecode(t, validYAML+"events:\n  function: on_event\n")
	if diff := cmp.Diff(&Events{Function: "on_event"}, m.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestDecodeManifestErrors(t *testing.T) {
	t.Parallel()
	edit := func(old, repl string) string {
		if !strings.Contains(validYAML, old) {
			panic("test edit does not apply: " + old)
		}
		return strings.Replace(validYAML, old, repl, 1)
	}
	f := testFile + ": "
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", "", f + "empty manifest"},
		{"unknown top field", edit("author: Ada", "authr: Ada"), f + "line 4: unknown field authr"},
		{"unknown skill field", edit("tags: [text]", "tag: [text]"), f + "line 22: unknown field tag"},
		{"unknown limits field", edit("timeout: 2s", "deadline: 2s"), f + "line 10: unknown field deadline"},
		{"wrong type", edit("concurrency: 4", "concurrency: many"), f + "line 13: cannot unmarshal !!str `many` into int"},
		{"two documents", validYAML + "---\nname: x\n", f + "more than one YAML document"},
		{"name missing", edit("name: text-tools", "name: ''"), f + "name: is required"},
		{"name upper", edit("name: text-tools", "name: Text"), f + "name: must match [a-z0-9][a-z0-9-]*"},
		{"name underscore", edit("name: text-tools", "name: text_tools"), f + "name: must match [a-z0-9][a-z0-9-]*"},
		{"name leading dash", edit("name: text-tools", "name: -text"), f + "name: must match [a-z0-9][a-z0-9-]*"},
		{"name too long", edit("name: text-tools", "name: "+strings.Repeat("a", 65)), f + "name: must be at most 64 characters"},
		{"version missing", edit("version: 1.2.0", "version: ''"), f + "version: is required"},
		{"version not semver", edit("version: 1.2.0", "version: '1.2'"), f + "version: must be a semantic version like 1.2.0"},
		{"version leading zero", edit("version: 1.2.0", "version: 01.2.0"), f + "version: must be a semantic version like 1.2.0"},
		{"wasm missing", edit("wasm: text_tools.wasm", "wasm: ''"), f + "wasm: is required"},
		{"wasm absolute", edit("wasm: text_tools.wasm", "wasm: /etc/x.wasm"), f + "wasm: must be a relative path inside the plugin folder"},
		{"wasm escape", edit("wasm: text_tools.wasm", "wasm: ../other/x.wasm"), f + "wasm: must be a relative path inside the plugin folder"},
		{"wasm sneaky escape", edit("wasm: text_tools.wasm", "wasm: build/../../x.wasm"), f + "wasm: must be a relative path inside the plugin folder"},
		{"sha256 short", edit("sha256: 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08", "sha256: abc"), f + "sha256: must be 64 hex digits (the SHA-256 of the module)"},
		{"timeout bad", edit("timeout: 2s", "timeout: 2"), f + "limits.timeout: must be a Go duration like 2s or 500ms"},
		{"timeout negative", edit("timeout: 2s", "timeout: -1s"), f + "limits.timeout: must be positive"},
		{"memory units", edit("memory: 64MiB", "memory: 64MB"), f + `limits.memory: "64MB": must be a byte count or a size like 512KiB, 64MiB, 1GiB`},
		{"memory tiny", edit("memory: 64MiB", "memory: 1KiB"), f + "limits.memory: must be at least 64KiB (one wasm page)"},
		{"output zero", edit("output: 1MiB", "output: 0B"), f + "limits.output: must be positive"},
		{"concurrency zero", edit("concurrency: 4", "concurrency: 0"), f + "limits.concurrency: must be at least 1"},
		{"host with scheme", edit("api.example.com,", "https://api.example.com,"), f + `permissions.allowed_hosts[0]: "https://api.example.com" must be a lower-case host name or *.suffix, optionally with :port (no scheme or path)`},
		{"host with a bad port", edit("api.example.com,", "api.example.com:99999,"), f + `permissions.allowed_hosts[0]: "api.example.com:99999" must be a lower-case host name or *.suffix, optionally with :port (no scheme or path)`},
		{"host with port zero", edit("api.example.com,", "api.example.com:0,"), f + `permissions.allowed_hosts[0]: "api.example.com:0" must be a lower-case host name or *.suffix, optionally with :port (no scheme or path)`},
		{"agent pattern", edit("config: {greeting: hello}", "config: {greeting: hello}\n  agents: [Billing]"), f + `permissions.agents[0]: "Billing" must be an agent id with * wildcards (billing, text-*), or *`},
		{"agent glob with ?", edit("config: {greeting: hello}", "config: {greeting: hello}\n  agents: [billing, \"text-?\"]"), f + `permissions.agents[1]: "text-?" must be an agent id with * wildcards (billing, text-*), or *`},
		{"host star alone", edit("api.example.com,", `"*",`), f + `permissions.allowed_hosts[0]: "*" must be a lower-case host name or *.suffix, optionally with :port (no scheme or path)`},
		{"host mid wildcard", edit(`"*.example.org"`, `"a.*.org"`), f + `permissions.allowed_hosts[1]: "a.*.org" must be a lower-case host name or *.suffix, optionally with :port (no scheme or path)`},
		{"guest path relative", edit("/data:", "data:"), f + `permissions.allowed_paths["data"]: guest path must be absolute and clean, like /data`},
		{"guest path dotdot", edit("/data:", "/a/../data:"), f + `permissions.allowed_paths["/a/../data"]: guest path must be absolute and clean, like /data`},
		{"host path empty", edit(`"/srv/data"`, `":rw"`), f + `permissions.allowed_paths["/data"]: host path must be a non-empty path, optionally followed by :rw`},
		{"config empty key", edit("config: {greeting: hello}", `config: {"": x}`), f + `permissions.config[""]: keys must be 1..256 bytes and values at most 65536 bytes`},
		{"no skills", strings.Split(validYAML, "skills:")[0], f + "skills: at least one skill is required"},
		{"skill id missing", edit("  - id: uppercase", "  - id: ''"), f + "skills[0].id: is required"},
		{"skill id bad", edit("  - id: count_words", "  - id: Count"), f + "skills[1].id: must match [a-z0-9][a-z0-9_-]*"},
		{"skill id too long", edit("  - id: count_words", "  - id: "+strings.Repeat("w", 65)), f + "skills[1].id: must be at most 64 characters"},
		{"skill id duplicate", edit("  - id: count_words", "  - id: uppercase"), f + `skills[1].id: "uppercase" duplicates skills[0].id`},
		{"skill description missing", edit("    description: Counts words\n", ""), f + "skills[1].description: is required"},
		{"skill empty tag", edit("tags: [text]", "tags: ['']"), f + "skills[0].tags[0]: is required"},
		{"example not json", edit(`'{ "text" : "yo" }'`, `'{text: yo}'`), f + "skills[0].examples[1]: is not valid JSON: invalid character 't' looking for beginning of object key string"},
		{"example trailing", edit(`'{ "text" : "yo" }'`, `'{} {}'`), f + "skills[0].examples[1]: is not valid JSON: invalid character after top-level value"},
		{"example off schema", edit(`'{ "text" : "yo" }'`, `'{"text": 5}'`), f + "skills[0].examples[1]: does not match input_schema: at /text: got number, want string"},
		{"example too long", edit(`'{ "text" : "yo" }'`, `'{"text": "abcdefghijk"}'`), f + "skills[0].examples[1]: does not match input_schema: at /text: maxLength: got 11, want 10"},
		{"example mapping without input", edit(`'{ "text" : "yo" }'`, `{text: yo}`), f + `skills[0].examples[1]: input is required (write a plain input as a JSON string: '{"text":"hi"}')`},
		{"example unknown field", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, expect: 1}`), f + "skills[0].examples[1]: unknown field expect (want input, output, error, needs_network, asks, turns)"},
		{"turns without asks", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, turns: [{reply: a}]}`), f + "skills[0].examples[1].turns: must be a list of 1 to 32 follow-ups {reply, asks?|output?|error?}, after asks"},
		{"asks with output", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, asks: name, output: {}}`), f + "skills[0].examples[1]: asks excludes output and error (they go in the last of turns)"},
		{"turn without reply", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, asks: name, turns: [{output: {}}]}`), f + "skills[0].examples[1].turns[0]: reply is required"},
		{"last turn asks", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, asks: name, turns: [{reply: a, asks: b}]}`), f + "skills[0].examples[1].turns[0]: every turn but the last asks again (asks), the last one does not"},
		{"turn unknown field", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, asks: name, turns: [{reply: a, say: b}]}`), f + "skills[0].examples[1].turns[0]: unknown field say (want reply, asks, output, error)"},
		{"example number", edit(`'{ "text" : "yo" }'`, `42`), f + "skills[0].examples[1]: must be the input as a JSON string, or a mapping {input, output?, error?}"},
		{"example input off schema", edit(`'{ "text" : "yo" }'`, `{input: {text: 5}}`), f + "skills[0].examples[1]: does not match input_schema: at /text: got number, want string"},
		{"example output off schema", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, output: [1]}`), f + "skills[0].examples[1].output: does not match output_schema: at (root): got array, want object"},
		{"example output and error", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, output: {}, error: {}}`), f + "skills[0].examples[1]: output and error exclude each other"},
		{"example error code", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, error: {code: [1]}}`), f + "skills[0].examples[1].error.code: must be the plugin's error code (a string) or a JSON-RPC code (an integer)"},
		{"example error reason", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, error: {reason: Plugin Error}}`), f + "skills[0].examples[1].error.reason: must be a host reason such as plugin_error, timeout or trap"},
		{"example error field", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, error: {message: x}}`), f + "skills[0].examples[1].error: unknown field message (want code, reason)"},
		{"idempotent not a bool", edit("    function: wc\n", "    function: wc\n    idempotent: yes\n"), f + "skills[1].idempotent: must be true or false"},
		{"idempotent a string", edit("    function: wc\n", "    function: wc\n    idempotent: 'true'\n"), f + "skills[1].idempotent: must be true or false"},
		{"idempotent a list", edit("    function: wc\n", "    function: wc\n    idempotent: [true]\n"), f + "skills[1].idempotent: must be true or false"},
		{"example needs_network", edit(`'{ "text" : "yo" }'`, `{input: {text: yo}, needs_network: maybe}`), f + "skills[0].examples[1].needs_network: must be true or false"},
		{"bad schema", edit("output_schema: {type: object}", "output_schema: {type: 5}"), f + "skills[0].output_schema: invalid JSON Schema: "},
		{"schema file ref", edit("output_schema: {type: object}", `output_schema: {$ref: "file:///etc/passwd"}`), f + "skills[0].output_schema: invalid JSON Schema: "},
		{"schema http ref", edit("output_schema: {type: object}", `output_schema: {$ref: "http://127.0.0.1:1/s.json"}`), f + "skills[0].output_schema: invalid JSON Schema: "},
		{"schema alias", edit("output_schema: {type: object}", "output_schema: {$defs: {s: &s {type: string}}, properties: {x: *s}}"),
			f + "skills[0].output_schema: not representable as JSON: line 29: YAML aliases are not supported"},
		{"schema not json", edit("output_schema: {type: object}", "output_schema: {type: .inf}"), f + "skills[0].output_schema: not representable as JSON: "},
		{"events without function", validYAML + "events: {}\n", f + "events.function: is required"},
		{"events unknown field", validYAML + "events: {function: on_event, retries: 3}\n", f + "line 33: unknown field retries"},
		{"events not a mapping", validYAML + "events: on_event\n", f + "line 33: cannot unmarshal !!str `on_event` into plugin.rawEvents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeManifest(testFile, []byte(tt.yaml))
			if err == nil {
				t.Fatalf("DecodeManifest succeeded, want error %q", tt.want)
			}
			got := strings.Split(err.Error(), "\n")[0]
			if strings.HasSuffix(tt.want, ": ") {
				if !strings.HasPrefix(got, tt.want) {
					t.Errorf("error = %q, want prefix %q", got, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Errorf("error mismatch\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

// TestIdempotentSkill: skills[].idempotent is false unless the manifest
// says true (false said explicitly too).
func TestIdempotentSkill(t *testing.T) {
	t.Parallel()
	m := mustDecode(t, strings.Replace(strings.Replace(validYAML, "    function: wc\n", "    function: wc\n    idempotent: true\n", 1),
		"    tags: [text]\n", "    tags: [text]\n    idempotent: false\n", 1))
	got := map[string]bool{}
	for _, s := range m.Skills {
		got[s.ID] = s.Idempotent
	}
	if diff := cmp.Diff(map[string]bool{"uppercase": false, "count_words": true}, got); diff != "" {
		t.Errorf("idempotent per skill (-want +got):\n%s", diff)
	}
	if mustDecode(t, validYAML).Skills[1].Idempotent {
		t.Error("a skill without the field is idempotent")
	}
}

// TestExampleForms: a JSON string, or a mapping with YAML values, an
// expected output (null included) or an expected error.
func TestExampleForms(t *testing.T) {
	t.Parallel()
	m := mustDecode(t, strings.Replace(validYAML, `examples: ['{"text":"hi"}', '{ "text" : "yo" }']`, `examples:
      - '{"text":"hi"}'
      - {input: {text: hi}, output: {text: HI}}
      - {input: {text: ""}, output: null}
      - {input: {text: "x"}, error: {code: invalid_input, reason: plugin_error}}
      - {input: {text: "y"}, error: {code: -32103}, needs_network: true}
      - {input: {text: "z"}, error: {}}`, 1))
	want := []Example{
		{Input: json.RawMessage(`{"text":"hi"}`)},
		{Input: json.RawMessage(`{"text":"hi"}`), Output: json.RawMessage(`{"text":"HI"}`)},
		{Input: json.RawMessage(`{"text":""}`), Output: json.RawMessage(`null`)},
		{Input: json.RawMessage(`{"text":"x"}`), Error: &ExpectedError{Code: "invalid_input", Reason: "plugin_error"}},
		{Input: json.RawMessage(`{"text":"y"}`), Error: &ExpectedError{RPCCode: -32103}, NeedsNetwork: true},
		{Input: json.RawMessage(`{"text":"z"}`), Error: &ExpectedError{}},
	}
	if diff := cmp.Diff(want, m.Skills[0].Examples); diff != "" {
		t.Errorf("examples (-want +got):\n%s", diff)
	}
}

func TestSchemaKeepsYAMLScalarsAsWritten(t *testing.T) {
	t.Parallel()
	m := mustDecode(t, "name: x\nversion: 1.0.0\nwasm: x.wasm\nskills:\n"+
		"  - {id: a, description: d, input_schema: {type: string, default: 2001-12-14, examples: [1.0, yes, null]}}\n"+
		"  - {id: b, description: d, input_schema: true}\n"+
		"  - {id: c, description: d, input_schema: null}\n")
	got := []string{string(m.Skills[0].InputSchema), string(m.Skills[1].InputSchema), string(m.Skills[2].InputSchema)}
	want := []string{`{"default":"2001-12-14","examples":[1,"yes",null],"type":"string"}`, "true", ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schemas (-want +got):\n%s", diff)
	}
}

func TestDecodeManifestReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := DecodeManifest(testFile, []byte("name: X\nversion: one\nwasm: /a.wasm\nskills: [{id: A}]\n"))
	want := []string{
		f("name: must match [a-z0-9][a-z0-9-]*"),
		f("version: must be a semantic version like 1.2.0"),
		f("wasm: must be a relative path inside the plugin folder"),
		f("skills[0].id: must match [a-z0-9][a-z0-9_-]*"),
		f("skills[0].description: is required"),
	}
	if err == nil {
		t.Fatal("DecodeManifest succeeded")
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func f(s string) string { return testFile + ": " + s }

func TestDecodeManifestCaps(t *testing.T) {
	t.Parallel()
	big := validYAML + "# " + strings.Repeat("x", MaxManifestBytes) + "\n"
	if _, err := DecodeManifest(testFile, []byte(big)); err == nil || !strings.Contains(err.Error(), "over the 1MiB cap") {
		t.Errorf("oversized manifest: err = %v", err)
	}
	// A billion-laughs alias bomb must fail fast, not eat memory.
	bomb := "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n" +
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n" +
		"name: x\nversion: 1.0.0\nwasm: x.wasm\nskills: [{id: a, description: d, input_schema: {default: *h}}]\n"
	if _, err := DecodeManifest(testFile, []byte(bomb)); err == nil {
		t.Error("alias bomb accepted")
	}
	many := "name: x\nversion: 1.0.0\nwasm: x.wasm\nskills:\n" + strings.Repeat("  - {id: a, description: d}\n", maxSkills+1)
	if _, err := DecodeManifest(testFile, []byte(many)); err == nil || err.Error() != f("skills: must have at most 256 skills") {
		t.Errorf("too many skills: err = %v", err)
	}
}

func TestLoadManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := LoadManifest(dir); err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "plugin.yaml")+": ") {
		t.Errorf("missing manifest: err = %v", err)
	}
	outside := filepath.Join(t.TempDir(), "plugin.yaml")
	mustWrite(t, outside, validYAML)
	if err := os.Symlink(outside, filepath.Join(dir, "plugin.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadManifest(dir); err == nil {
		t.Error("a plugin.yaml symlinked out of the folder was read")
	}
	dir2 := t.TempDir()
	mustWrite(t, filepath.Join(dir2, "plugin.yaml"), validYAML)
	m, err := LoadManifest(dir2)
	if err != nil {
		t.Fatal(err)
	}
	if m.Dir != dir2 || m.File != filepath.Join(dir2, "plugin.yaml") {
		t.Errorf("Dir, File = %q, %q", m.Dir, m.File)
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(validYAML))
	f.Add([]byte("name: x\nversion: 1.0.0\nwasm: x.wasm\nskills: [{id: a, description: d}]\n"))
	f.Add([]byte("skills: [{id: a, input_schema: {$ref: '#/x'}}]"))
	f.Add([]byte("limits: {memory: 1.5GiB}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(testFile, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), testFile+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if !reName.MatchString(m.Name) || len(m.Skills) == 0 || !filepath.IsLocal(m.Wasm) {
			t.Fatalf("invalid manifest accepted: %+v", m)
		}
		for _, s := range m.Skills {
			if !reSkillID.MatchString(s.ID) || s.Function == "" {
				t.Fatalf("invalid skill accepted: %+v", s)
			}
		}
	})
}
