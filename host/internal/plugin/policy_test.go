package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"
	"github.com/skillhost/skillhost/host/config"
)

func TestPolicyDefaults(t *testing.T) {
	t.Parallel()
	got := config.Policy{}.WithDefaults()
	want := config.Policy{
		MaxTimeout: 30 * time.Second, MaxMemory: 256 * config.MiB, MaxOutput: 16 * config.MiB, MaxConcurrency: 16,
		DefaultLimits:  config.Limits{Timeout: 2 * time.Second, Memory: 64 * config.MiB, Output: config.MiB, Concurrency: 4},
		MaxModuleBytes: 64 * config.MiB, IdleTimeout: time.Minute, QueueWait: 100 * time.Millisecond,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	// A lower maximum pulls the unset default down with it.
	small := config.Policy{MaxTimeout: time.Second, MaxMemory: 16 * config.MiB}.WithDefaults()
	if small.DefaultLimits.Timeout != time.Second || small.DefaultLimits.Memory != 16*config.MiB {
		t.Errorf("defaults above the maxima: %+v", small.DefaultLimits)
	}
	if err := (config.Policy{}).Validate(); err != nil {
		t.Errorf("default policy invalid: %v", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    config.Policy
		want string
	}{
		{"default above max", config.Policy{MaxTimeout: time.Second, DefaultLimits: config.Limits{Timeout: 5 * time.Second}}, "policy.default_limits.timeout: 5s exceeds policy.max_timeout 1s"},
		{"memory above max", config.Policy{MaxMemory: config.MiB, DefaultLimits: config.Limits{Memory: 2 * config.MiB}}, "policy.default_limits.memory: 2MiB exceeds policy.max_memory 1MiB"},
		{"bad host pattern", config.Policy{AllowedHostPatterns: []string{"http://x"}}, `policy.allowed_host_patterns[0]: "http://x" must be a host name or *.suffix, optionally with :port, or *`},
		{"relative prefix", config.Policy{AllowedPathPrefixes: []string{"data"}}, `policy.allowed_path_prefixes[0]: "data" must be an absolute path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.Validate()
			if err == nil || err.Error() != tt.want {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	allowed := t.TempDir()
	mustWrite(t, filepath.Join(allowed, "data", "f.txt"), "x")
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(allowed, "sneaky")); err != nil {
		t.Fatal(err)
	}
	base := "name: x\nversion: 1.0.0\nwasm: x.wasm\nskills: [{id: a, description: d}]\n"
	pol := config.Policy{
		AllowedHostPatterns:  []string{"api.example.com", "*.example.org", "api.example.com:8443", "*.example.org:8443"},
		AllowedPathPrefixes:  []string{allowed},
		AllowedAgentPatterns: []string{"billing", "text-*"},
	}
	tests := []struct {
		name   string
		pol    config.Policy
		extra  string
		want   string // "" = accepted
		limits config.Limits
	}{
		{name: "defaults filled", limits: config.Limits{Timeout: 2 * time.Second, Memory: 64 * config.MiB, Output: config.MiB, Concurrency: 4}},
		{name: "requests kept", extra: "limits: {timeout: 5s, memory: 128MiB, output: 2MiB, concurrency: 8}",
			limits: config.Limits{Timeout: 5 * time.Second, Memory: 128 * config.MiB, Output: 2 * config.MiB, Concurrency: 8}},
		{name: "memory over", extra: "limits: {memory: 512MiB}", want: "limits.memory: 512MiB exceeds the operator's max 256MiB"},
		{name: "timeout over", extra: "limits: {timeout: 1m}", want: "limits.timeout: 1m0s exceeds the operator's max 30s"},
		{name: "output over", extra: "limits: {output: 1GiB}", want: "limits.output: 1GiB exceeds the operator's max 16MiB"},
		{name: "concurrency over", extra: "limits: {concurrency: 17}", want: "limits.concurrency: 17 exceeds the operator's max 16"},
		{name: "network by default refused", pol: config.Policy{}, extra: "permissions: {allowed_hosts: [api.example.com]}",
			want: `permissions.allowed_hosts[0]: "api.example.com" is not allowed by the operator's policy (policy.allowed_host_patterns)`},
		{name: "exact host allowed", extra: "permissions: {allowed_hosts: [api.example.com]}"},
		{name: "other host refused", extra: "permissions: {allowed_hosts: [evil.example.com]}",
			want: `permissions.allowed_hosts[0]: "evil.example.com" is not allowed by the operator's policy (policy.allowed_host_patterns)`},
		{name: "subdomain of wildcard", extra: "permissions: {allowed_hosts: [a.b.example.org, '*.x.example.org', '*.example.org']}"},
		{name: "wildcard apex refused", extra: "permissions: {allowed_hosts: [example.org]}",
			want: `permissions.allowed_hosts[0]: "example.org" is not allowed by the operator's policy (policy.allowed_host_patterns)`},
		{name: "label boundary", extra: "permissions: {allowed_hosts: [badexample.org]}",
			want: `permissions.allowed_hosts[0]: "badexample.org" is not allowed by the operator's policy (policy.allowed_host_patterns)`},
		{name: "port the policy names", extra: "permissions: {allowed_hosts: ['api.example.com:8443', 'a.example.org:8443']}"},
		{name: "other port refused", extra: "permissions: {allowed_hosts: ['api.example.com:8080']}",
			want: `permissions.allowed_hosts[0]: "api.example.com:8080" is not allowed by the operator's policy (policy.allowed_host_patterns)`},
		{name: "default ports do not cover a port", extra: "permissions: {allowed_hosts: ['a.example.org:9000']}",
			want: `permissions.allowed_hosts[0]: "a.example.org:9000" is not allowed by the operator's policy (policy.allowed_host_patterns)`},
		{name: "wider wildcard refused", extra: "permissions: {allowed_hosts: ['*.org']}",
			want: `permissions.allowed_hosts[0]: "*.org" is not allowed by the operator's policy (policy.allowed_host_patterns)`},
		{name: "star policy", pol: config.Policy{AllowedHostPatterns: []string{"*"}}, extra: "permissions: {allowed_hosts: ['*.org', a.b]}"},
		{name: "path inside prefix", extra: "permissions: {allowed_paths: {/d: " + filepath.Join(allowed, "data") + "}}"},
		{name: "path by default refused", pol: config.Policy{}, extra: "permissions: {allowed_paths: {/d: " + filepath.Join(allowed, "data") + "}}",
			want: `permissions.allowed_paths["/d"]: host path ` + filepath.Join(allowed, "data") + ` is outside the operator's allowed prefixes (policy.allowed_path_prefixes)`},
		{name: "path outside", extra: "permissions: {allowed_paths: {/d: " + outside + "}}",
			want: `permissions.allowed_paths["/d"]: host path ` + outside + ` is outside the operator's allowed prefixes (policy.allowed_path_prefixes)`},
		{name: "symlink out of prefix", extra: "permissions: {allowed_paths: {/d: " + filepath.Join(allowed, "sneaky") + "}}",
			want: `permissions.allowed_paths["/d"]: host path ` + filepath.Join(allowed, "sneaky") + ` is outside the operator's allowed prefixes (policy.allowed_path_prefixes)`},
		{name: "dotdot out of prefix", extra: "permissions: {allowed_paths: {/d: " + allowed + "/data/../../" + filepath.Base(outside) + "}}",
			want: `permissions.allowed_paths["/d"]: host path ` + outside + ` is outside the operator's allowed prefixes (policy.allowed_path_prefixes)`},
		{name: "missing path", extra: "permissions: {allowed_paths: {/d: " + filepath.Join(allowed, "nope") + "}}",
			want: `permissions.allowed_paths["/d"]: host path ` + filepath.Join(allowed, "nope") + `: no such file or directory`},
		{name: "rw refused", extra: "permissions: {allowed_paths: {/d: '" + filepath.Join(allowed, "data") + ":rw'}}",
			want: `permissions.allowed_paths["/d"]: read-write mount refused: policy.allow_writable_paths is false`},
		{name: "agents by default refused", pol: config.Policy{}, extra: "permissions: {agents: [billing]}",
			want: `permissions.agents[0]: "billing" is not allowed by the operator's policy (policy.allowed_agent_patterns)`},
		{name: "agents the policy names", extra: "permissions: {agents: [billing, text-tools, 'text-*', 'text-a*']}"},
		{name: "wider agent pattern refused", extra: "permissions: {agents: ['*']}",
			want: `permissions.agents[0]: "*" is not allowed by the operator's policy (policy.allowed_agent_patterns)`},
		{name: "other agent refused", extra: "permissions: {agents: [payroll]}",
			want: `permissions.agents[0]: "payroll" is not allowed by the operator's policy (policy.allowed_agent_patterns)`},
		{name: "star agent policy", pol: config.Policy{AllowedHostPatterns: []string{}, AllowedAgentPatterns: []string{"*"}}, extra: "permissions: {agents: ['*', x]}"},
		{name: "rw allowed", pol: config.Policy{AllowWritablePaths: true, AllowedPathPrefixes: []string{allowed}},
			extra: "permissions: {allowed_paths: {/d: '" + filepath.Join(allowed, "data") + ":rw'}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := pol
			if tt.pol.AllowedHostPatterns != nil || tt.pol.AllowedAgentPatterns != nil || tt.pol.AllowWritablePaths || strings.Contains(tt.name, "by default") {
				p = tt.pol
			}
			m := mustDecode(t, base+tt.extra+"\n")
			got, err := Check(p, m)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check refused: %v", err)
				}
				if tt.limits != (config.Limits{}) && got != tt.limits {
					t.Errorf("effective limits = %+v, want %+v", got, tt.limits)
				}
				return
			}
			if err == nil || err.Error() != testFile+": "+tt.want {
				t.Errorf("Check error\n got: %v\nwant: %s", err, testFile+": "+tt.want)
			}
		})
	}
}

func TestPolicyFromConfig(t *testing.T) {
	t.Parallel()
	k := koanf.New(".")
	err := k.Load(confmap.Provider(map[string]any{
		"policy.max_timeout":                "10s",
		"policy.max_memory":                 "128MiB",
		"policy.max_output":                 1048576,
		"policy.default_limits.memory":      "32MiB",
		"policy.allowed_host_patterns":      []string{"*.example.com"},
		"policy.allow_writable_paths":       true,
		"policy.queue_wait":                 "250ms",
		"policy.default_limits.concurrency": 2,
	}, "."), nil)
	if err != nil {
		t.Fatal(err)
	}
	var p config.Policy
	if err := k.Unmarshal("policy", &p); err != nil {
		t.Fatal(err)
	}
	want := config.Policy{
		MaxTimeout: 10 * time.Second, MaxMemory: 128 * config.MiB, MaxOutput: config.MiB,
		DefaultLimits:       config.Limits{Memory: 32 * config.MiB, Concurrency: 2},
		AllowedHostPatterns: []string{"*.example.com"}, AllowWritablePaths: true, QueueWait: 250 * time.Millisecond,
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("policy from config (-want +got):\n%s", diff)
	}
}
