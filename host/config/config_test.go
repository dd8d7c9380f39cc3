package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/skillhost/skillhost/host/config"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "skillhost.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	got, err := config.Load(config.Sources{Environ: []string{}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := cmp.Diff(config.Defaults(), got); diff != "" {
		t.Errorf("defaults changed by Load (-want +got):\n%s", diff)
	}
}

func TestLoadLayers(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "listen: 127.0.0.1:9000\nplugins: from-file\npolicy:\n  max_memory: 128MiB\n  max_timeout: 5s\n  default_limits:\n    timeout: 1s\nnet:\n  allow_private: [127.0.0.0/8]\n")
	flags := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	flags.String("listen", "127.0.0.1:8080", "")
	flags.String("plugins", "plugins", "")
	flags.String("config", "", "")
	if err := flags.Parse([]string{"--listen", "127.0.0.1:9100", "--config", file}); err != nil {
		t.Fatal(err)
	}
	got, err := config.Load(config.Sources{
		File: file,
		Environ: []string{"SKILLHOST_LISTEN=127.0.0.1:9050", "SKILLHOST_POLICY__MAX_TIMEOUT=7s", "SKILLHOST_NET__ALLOW_PRIVATE=10.0.0.0/8, 127.0.0.0/8", "OTHER=1",
			"SKILLHOST_API_KEY=client-side", "SKILLHOST_URL=http://127.0.0.1:1"},
		Flags: flags,
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.Defaults()
	want.Listen = "127.0.0.1:9100"                                // flag beats env and file
	want.Plugins = "from-file"                                    // file beats default; unchanged flag does not override
	want.Policy.MaxMemory = 128 * config.MiB                      // file
	want.Policy.MaxTimeout = 7 * time.Second                      // env beats file
	want.Policy.DefaultLimits.Timeout = time.Second               // nested file key
	want.Net.AllowPrivate = []string{"10.0.0.0/8", "127.0.0.0/8"} // env list
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layering (-want +got):\n%s", diff)
	}
}

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		environ []string
		want    string
	}{
		{"unknown file key", "lisen: x\n", nil, "unknown key(s) lisen (did you mean listen?)"},
		{"unknown nested file key", "http:\n  read_timout: 5s\n", nil, "http.read_timout (did you mean http.read_timeout?)"},
		{"unknown env key", "", []string{"SKILLHOST_NOPE=1"}, "unknown key(s) nope (SKILLHOST_NOPE)"},
		{"env key with one underscore", "", []string{"SKILLHOST_HTTP_READ_TIMEOUT=5s"},
			"http_read_timeout (SKILLHOST_HTTP_READ_TIMEOUT) (did you mean SKILLHOST_HTTP__READ_TIMEOUT?)"},
		{"duration without unit in file", "http:\n  read_timeout: 10\n", nil,
			`config file`},
		{"duration without unit names key and value", "http:\n  read_timeout: 10\n", nil,
			`http.read_timeout: 10 has no unit (it would mean 10 nanoseconds); write a duration such as "10s" or "10ms"`},
		{"quoted duration without unit in file", "plans:\n  ack_wait: \"30\"\n", nil, `plans.ack_wait: 30 has no unit`},
		{"fractional duration without unit", "net:\n  timeout: 1.5\n", nil, `net.timeout: 1.5 has no unit`},
		{"nested policy duration without unit", "policy:\n  default_limits:\n    timeout: 2\n", nil, `policy.default_limits.timeout: 2 has no unit`},
		{"duration without unit in env", "", []string{"SKILLHOST_HTTP__IDLE_TIMEOUT=60"},
			`config environment: SKILLHOST_HTTP__IDLE_TIMEOUT (http.idle_timeout): 60 has no unit`},
		{"size without unit in file", "http:\n  body_limit: 1048576\n", nil,
			`http.body_limit: 1048576 has no unit; write a size such as "1048576B", "1048576KiB" or "1048576MiB"`},
		{"size without unit in env", "", []string{"SKILLHOST_SANDBOX__MAX_LIVE_BYTES=4"},
			`SKILLHOST_SANDBOX__MAX_LIVE_BYTES (sandbox.max_live_bytes): 4 has no unit`},
		{"every unit-less value is listed", "http:\n  read_timeout: 10\n  body_limit: 5\n", nil,
			`http.body_limit: 5 has no unit; write a size such as "5B", "5KiB" or "5MiB"; http.read_timeout: 10 has no unit`},
		{"bad size", "policy:\n  max_memory: 12MB\n", nil, "must be a byte count or a size like"},
		{"lease ttl too short", "a2a:\n  lease_ttl: 500ms\n  lease_sweep: 100ms\n", nil, "a2a.lease_ttl: 500ms: must be 1s..1h0m0s"},
		{"lease sweep past the ttl", "a2a:\n  lease_ttl: 2s\n  lease_sweep: 3s\n", nil, "a2a.lease_sweep: 3s: must be 100ms..a2a.lease_ttl (2s)"},
		{"unknown remote agent key", "agents:\n  remote:\n    - {id: b, url: \"http://127.0.0.1:1\", retry: {max_atempts: 2}}\n", nil,
			"agents.remote[0]: unknown key(s) retry.max_atempts (did you mean retry.max_attempts?)"},
		{"remote agent duration without unit", "agents:\n  remote:\n    - {id: b, url: \"http://127.0.0.1:1\", timeout: 10}\n", nil,
			"agents.remote[0]: timeout: 10 has no unit"},
		{"remote agent id", "agents:\n  remote:\n    - {id: Billing, url: \"https://b.example\"}\n", nil, "agents.remote[0].id"},
		{"remote agent used twice", "agents:\n  remote:\n    - {id: b, url: \"https://b.example\"}\n    - {id: b, url: \"https://c.example\"}\n", nil,
			`agents.remote[1].id: "b" is used twice`},
		{"remote agent url", "agents:\n  remote:\n    - {id: b, url: \"ftp://b.example\"}\n", nil, "agents.remote[0].url"},
		{"remote agent own fallback", "agents:\n  remote:\n    - {id: b, url: \"https://b.example\", fallback: [b]}\n", nil, "agents.remote[0].fallback[0]"},
		{"remote key over plain http", "agents:\n  remote:\n    - {id: b, url: \"http://b.example\", credentials: {key_env: K}}\n", nil,
			"would carry the API key in clear text"},
		{"remote attempt longer than call", "agents:\n  remote:\n    - {id: b, url: \"https://b.example\", timeout: 1s, attempt_timeout: 2s}\n", nil,
			"attempt_timeout: 2s exceeds timeout 1s"},
		{"call depth", "agents:\n  max_call_depth: 0\n", nil, "agents.max_call_depth: must be 1..64"},
		{"agent pattern", "policy:\n  allowed_agent_patterns: [\"Billing?\"]\n", nil, "allowed_agent_patterns[0]"},
		{"bad duration", "policy:\n  max_timeout: soon\n", nil, "max_timeout"},
		{"zero limit", "rpc:\n  max_batch: 0\n", nil, "config rpc.max_batch: must be greater than zero"},
		{"replaced key", "policy:\n  warm_instances: 1\n", nil,
			"policy.warm_instances (replaced: instances are created on demand and closed after policy.idle_timeout; a plugin asks to stay warm with limits.min_instances, capped by policy.max_min_instances)"},
		{"default min instances over the cap", "policy:\n  default_limits:\n    min_instances: 1\n", nil,
			"policy.default_limits.min_instances: must be between 0 and policy.max_min_instances (0)"},
		{"negative idle timeout", "policy:\n  idle_timeout: -1s\n", nil, "durations must not be negative"},
		{"no code budget", "sandbox:\n  max_code_bytes: 0B\n", nil, "config sandbox.max_code_bytes: must be greater than zero"},
		{"compile workers", "sandbox:\n  compile_workers: -1\n", nil, "config sandbox.compile_workers: must be 0 (the number of cores) or 1..256"},
		{"bad listen", "listen: nonsense\n", nil, `config listen: "nonsense" is not host:port`},
		{"bad level", "log:\n  level: loud\n", nil, "config log.level"},
		{"bad private range", "net:\n  allow_private: [10.0.0.0/8, intranet]\n", nil, `config net.allow_private[1]: "intranet" is not an address or CIDR prefix`},
		{"key without digest", "auth:\n  keys:\n    - {id: ci, scopes: [\"*\"]}\n", nil, "config auth.keys[0].sha256"},
		{"key with a bad scope", "auth:\n  keys:\n    - {id: ci, sha256: " + strings.Repeat("ab", 32) + ", scopes: [\"plans\"]}\n", nil, "auth.keys[0].scopes[0]"},
		{"bad limit rate", "auth:\n  limits:\n    rate: fast\n", nil, "config auth.limits.rate"},
		{"cert without key", "http:\n  tls:\n    cert_file: c.pem\n", nil, "config http.tls: set both"},
		{"plain HTTP on every interface", "listen: 0.0.0.0:8080\n", nil, "http.allow_insecure_remote: true"},
		{"bad origin", "http:\n  allowed_origins: [\"app.example\"]\n", nil, "config http.allowed_origins[0]"},
		{"origin with a path", "http:\n  allowed_origins: [\"https://app.example/ui\"]\n", nil, "config http.allowed_origins[0]"},
		{"tracing endpoint not a URL", "tracing:\n  otlp_endpoint: collector:4318\n", nil, `config tracing.otlp_endpoint: "collector:4318" is not an http(s) URL`},
		{"sample ratio over 1", "tracing:\n  sample_ratio: 2\n", nil, "config tracing.sample_ratio: 2 is not between 0 and 1"},
		{"no delivery slot", "delivery:\n  concurrent_per_destination: 0\n", nil, "config delivery.concurrent_per_destination: must be greater than zero"},
		{"key share over the host's", "delivery:\n  max_pending: 10\n  max_pending_per_key: 11\n", nil, "config delivery.max_pending_per_key: must not exceed delivery.max_pending"},
		{"key concurrency over the host's", "delivery:\n  max_concurrent: 2\n", nil, "config delivery.concurrent_per_key: and delivery.concurrent_per_destination must not exceed delivery.max_concurrent"},
		{"tasks per key", "a2a:\n  max_tasks_per_key: 0\n", nil, "config a2a.max_tasks_per_key: must be greater than zero"},
		{"tiny tasks bucket", "a2a:\n  max_bucket: 1MiB\n", nil, "config a2a.max_bucket: 1MiB: must be at least 8MiB"},
		{"task bytes per key over the bucket", "a2a:\n  max_bucket: 64MiB\n  max_task_bytes_per_key: 128MiB\n", nil,
			"config a2a.max_task_bytes_per_key: 128MiB: must be 0"},
		{"tasks reserve over half the bucket", "a2a:\n  reserve: 600MiB\n", nil, "config a2a.reserve: 600MiB"},
		{"plans per key", "plans:\n  max_per_key: 0\n", nil, "config plans.max_per_key: must be greater than zero"},
		{"plan bytes per key under two records", "plans:\n  max_bytes_per_key: 1MiB\n", nil, "config plans.max_bytes_per_key: 1MiB"},
		{"plans reserve over half the bucket", "plans:\n  reserve: 1GiB\n", nil, "config plans.reserve: 1GiB"},
		{"grpc listen not host:port", "grpc:\n  listen: grpc\n", nil, `config grpc.listen: "grpc" is not host:port`},
		{"grpc on the http port", "listen: 127.0.0.1:8080\ngrpc:\n  listen: 127.0.0.1:8080\n", nil, "gRPC needs a port of its own"},
		{"plain grpc on every interface", "grpc:\n  listen: 0.0.0.0:9090\n", nil, `config grpc.listen: "0.0.0.0:9090" is not a loopback address`},
		{"grpc share over the cap", "grpc:\n  max_conns: 8\n", nil, "config grpc.max_conns_per_addr: 64 must be 0 (no per-address share) up to grpc.max_conns (8)"},
		{"grpc streams", "grpc:\n  max_concurrent_streams: 0\n", nil, "config grpc.max_concurrent_streams: 0 must be 1..10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := config.Sources{Environ: tt.environ}
			if src.Environ == nil {
				src.Environ = []string{}
			}
			if tt.file != "" {
				src.File = writeFile(t, tt.file)
			}
			_, err := config.Load(src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadUnitsAccepted(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "http:\n  read_timeout: 1500ms\n  write_timeout: 0\n  body_limit: 2048B\nsandbox:\n  max_live_bytes: 0\n")
	got, err := config.Load(config.Sources{File: file, Environ: []string{"SKILLHOST_HTTP__IDLE_TIMEOUT=1m", "SKILLHOST_RPC__MAX_BODY=64KiB"}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.Defaults()
	want.HTTP.ReadTimeout, want.HTTP.WriteTimeout, want.HTTP.BodyLimit = 1500*time.Millisecond, 0, 2048
	want.HTTP.IdleTimeout, want.RPC.MaxBody = time.Minute, 64*config.KiB
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
}

// Flags that are config keys go through the same check: a string flag
// holding a unit-less duration is refused, naming the flag.
func TestLoadFlagUnits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value, want string
	}{
		{"unit-less duration", "10", `config flags: --http.read_timeout (http.read_timeout): 10 has no unit`},
		{"duration with unit", "3s", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			flags := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			flags.String("http.read_timeout", "10s", "")
			if err := flags.Parse([]string{"--http.read_timeout", tt.value}); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(config.Sources{Environ: []string{}, Flags: flags})
			if tt.want == "" {
				if err != nil || cfg.HTTP.ReadTimeout != 3*time.Second {
					t.Fatalf("Load = %v, %v; want read_timeout 3s", cfg.HTTP.ReadTimeout, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadSecurity(t *testing.T) {
	t.Parallel()
	digest := strings.Repeat("9f", 32)
	file := writeFile(t, "listen: 0.0.0.0:8443\nhttp:\n  allow_insecure_remote: true\n  allowed_origins: [\"HTTPS://App.Example:443\"]\n"+
		"auth:\n  keys:\n    - id: ci\n      sha256: "+digest+"\n      scopes: [\"*\"]\n      rate: 10/s\n"+
		"    - {id: text, sha256: "+strings.Repeat("0a", 32)+", scopes: [\"skill:upper*\", \"agent:text-tools\"]}\n")
	got, err := config.Load(config.Sources{File: file, Environ: []string{"SKILLHOST_HTTP__ALLOWED_HOSTS=skills.internal, skills.internal:8443"}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []config.AuthKey{
		{ID: "ci", SHA256: digest, Scopes: []string{"*"}, Rate: "10/s"},
		{ID: "text", SHA256: strings.Repeat("0a", 32), Scopes: []string{"skill:upper*", "agent:text-tools"}},
	}
	if diff := cmp.Diff(want, got.Auth.Keys); diff != "" {
		t.Errorf("auth.keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"skills.internal", "skills.internal:8443"}, got.HTTP.AllowedHosts); diff != "" {
		t.Errorf("allowed_hosts (-want +got):\n%s", diff)
	}
	ks, err := got.Auth.KeySet()
	if err != nil || ks.Len() != 2 {
		t.Fatalf("KeySet = %v, %v", ks, err)
	}
	if o, err := config.NormalizeOrigin(got.HTTP.AllowedOrigins[0]); err != nil || o != "https://app.example" {
		t.Errorf("NormalizeOrigin = %q, %v", o, err)
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:1": false, ":8080": false, "10.0.0.1:1": false} {
		if got := config.LoopbackListen(addr); got != want {
			t.Errorf("LoopbackListen(%q) = %v, want %v", addr, got, want)
		}
	}
}

// --mcp-stdio sets the key mcp_stdio like any flag: it overrides the file
// both ways.
func TestLoadMCPStdioFlag(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "mcp_stdio: true\n")
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--mcp-stdio=false"}, false},
		{[]string{"--mcp-stdio"}, true},
	} {
		flags := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		flags.Bool("mcp-stdio", false, "")
		if err := flags.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		got, err := config.Load(config.Sources{File: file, Flags: flags})
		if err != nil {
			t.Fatalf("%v: Load: %v", tt.args, err)
		}
		if got.MCPStdio != tt.want {
			t.Errorf("%v with mcp_stdio: true in the file: MCPStdio = %v, want %v", tt.args, got.MCPStdio, tt.want)
		}
	}
}

// TestLoadGRPC: gRPC is off by default; grpc.listen turns it on from any
// layer, on a non-loopback address only with TLS (or
// http.allow_insecure_remote) as for HTTP.
func TestLoadGRPC(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		environ []string
		want    string
	}{
		{"default off", "", nil, ""},
		{"env", "", []string{"SKILLHOST_GRPC__LISTEN=127.0.0.1:9090"}, "127.0.0.1:9090"},
		{"file with TLS everywhere", "listen: 0.0.0.0:8443\nhttp:\n  tls: {cert_file: c.pem, key_file: k.pem}\ngrpc:\n  listen: 0.0.0.0:9443\n", nil, "0.0.0.0:9443"},
		{"behind a proxy", "http:\n  allow_insecure_remote: true\ngrpc:\n  listen: 0.0.0.0:9090\n", nil, "0.0.0.0:9090"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := config.Sources{Environ: tt.environ}
			if src.Environ == nil {
				src.Environ = []string{}
			}
			if tt.file != "" {
				src.File = writeFile(t, tt.file)
			}
			got, err := config.Load(src)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := config.DefaultGRPC()
			want.Listen = tt.want
			if diff := cmp.Diff(want, got.GRPC); diff != "" {
				t.Errorf("grpc (-want +got):\n%s", diff)
			}
		})
	}
}
