package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// EnvPrefix is the prefix of environment variables read by Load.
const EnvPrefix = "SKILLHOST_"

// Sources are the layers above the defaults. Every field is optional.
type Sources struct {
	File    string         // YAML file; "" skips it
	Environ []string       // environment as KEY=VALUE; nil reads os.Environ
	Flags   *pflag.FlagSet // changed flags whose names are config keys override the rest
}

// listKeys are keys whose environment value is a comma-separated list.
var listKeys = map[string]bool{
	"policy.allowed_host_patterns": true, "policy.allowed_path_prefixes": true, "net.allow_private": true,
	"http.allowed_origins": true, "http.allowed_hosts": true, "identity.key_file": true, "trust.publishers": true,
}

// Load builds the configuration: defaults < file < environment < flags, then
// validates it. Unknown keys in the file or environment are errors.
func Load(src Sources) (Config, error) {
	k := koanf.New(".")
	if err := k.Load(structs.Provider(Defaults(), "koanf"), nil); err != nil {
		return Config{}, fmt.Errorf("config defaults: %w", err)
	}
	known := map[string]bool{}
	for _, key := range k.Keys() {
		known[key] = true
	}
	var settings map[string]PluginSettings
	if src.File != "" {
		doc, s, err := readFile(src.File)
		if err != nil {
			return Config{}, err
		}
		settings = s
		fk := koanf.New(".")
		if err := fk.Load(confmap.Provider(doc, ""), nil); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", src.File, err)
		}
		if err := checkKeys(fk.Keys(), known, src.File, fileKey); err != nil {
			return Config{}, err
		}
		if err := checkUnits(fk, "file "+src.File, fileKey); err != nil {
			return Config{}, err
		}
		if err := k.Merge(fk); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", src.File, err)
		}
	}
	ek := koanf.New(".")
	environ := src.Environ
	if environ == nil {
		environ = os.Environ()
	}
	if err := ek.Load(env.Provider(".", env.Opt{
		Prefix:        EnvPrefix,
		EnvironFunc:   func() []string { return environ },
		TransformFunc: envKey,
	}), nil); err != nil {
		return Config{}, fmt.Errorf("config environment: %w", err)
	}
	if err := checkKeys(ek.Keys(), known, "environment ("+EnvPrefix+"*)", envName); err != nil {
		return Config{}, err
	}
	if err := checkUnits(ek, "environment", envName); err != nil {
		return Config{}, err
	}
	if err := k.Merge(ek); err != nil {
		return Config{}, fmt.Errorf("config environment: %w", err)
	}
	if src.Flags != nil {
		flk := koanf.New(".")
		if err := flk.Load(posflag.ProviderWithFlag(src.Flags, ".", k, func(f *pflag.Flag) (string, any) {
			key := flagKey(f.Name) // --mcp-stdio sets mcp_stdio
			if !known[key] || !f.Changed {
				return "", nil
			}
			return key, posflag.FlagVal(src.Flags, f)
		}), nil); err != nil {
			return Config{}, fmt.Errorf("config flags: %w", err)
		}
		if err := checkUnits(flk, "flags", flagName); err != nil {
			return Config{}, err
		}
		if err := k.Merge(flk); err != nil {
			return Config{}, fmt.Errorf("config flags: %w", err)
		}
	}
	if err := checkItemKeys(k, "agents.remote", RemoteAgent{}); err != nil {
		return Config{}, err
	}
	if err := checkItemKeys(k, "sources.oci", OCISource{}); err != nil {
		return Config{}, err
	}
	if err := checkItemKeys(k, "policy.skill_rates", SkillRate{}); err != nil {
		return Config{}, err
	}
	var cfg Config
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg.PluginSettings = settings
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// ClientEnv are SKILLHOST_* variables read by the client commands (call,
// …), never configuration keys of the server.
var ClientEnv = map[string]bool{"SKILLHOST_URL": true, "SKILLHOST_API_KEY": true}

// envKey maps SKILLHOST_POLICY__MAX_TIMEOUT to policy.max_timeout; client
// variables map to "" (skipped).
func envKey(k, v string) (string, any) {
	if ClientEnv[k] {
		return "", nil
	}
	key := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, EnvPrefix)), "__", ".")
	if listKeys[key] {
		var items []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		return key, items
	}
	return key, v
}

// checkItemKeys refuses unknown keys inside the items of the list at key,
// whose items decode into the struct item (a list is a single value to
// koanf, so checkKeys cannot see inside it).
func checkItemKeys(k *koanf.Koanf, key string, item any) error {
	items, ok := k.Get(key).([]any)
	if !ok {
		return nil
	}
	ik := koanf.New(".")
	if err := ik.Load(structs.Provider(item, "koanf"), nil); err != nil {
		return fmt.Errorf("config %s: %w", key, err)
	}
	known := map[string]bool{}
	for _, name := range ik.Keys() {
		known[name] = true
	}
	units := unitKeysOf(reflect.TypeOf(item))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return fmt.Errorf("config %s[%d]: must be a mapping", key, i)
		}
		vk := koanf.New(".")
		if err := vk.Load(confmap.Provider(m, "."), nil); err != nil {
			return fmt.Errorf("config %s[%d]: %w", key, i, err)
		}
		where := fmt.Sprintf("%s[%d]", key, i)
		if err := checkKeys(vk.Keys(), known, where, fileKey); err != nil {
			return err
		}
		if err := checkUnitsIn(vk, units, where, fileKey); err != nil {
			return err
		}
	}
	return nil
}

// Validate reports the first invalid value, naming its key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: "+format, append([]any{key}, args...)...))
	}
	if c.Listen == "" && !c.Stdio && !c.MCPStdio {
		bad("listen", "empty and stdio and mcp_stdio are off: nothing to serve")
	}
	if c.Stdio && c.MCPStdio {
		bad("mcp_stdio", "and stdio both want stdin/stdout: choose one")
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			bad("listen", "%q is not host:port", c.Listen)
		}
	}
	if c.Plugins == "" {
		bad("plugins", "must not be empty")
	}
	if c.Data == "" {
		bad("data", "must not be empty")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		bad("log.format", "%q is not text or json", c.Log.Format)
	}
	positive := map[string]int64{
		"http.body_limit": int64(c.HTTP.BodyLimit), "http.read_timeout": int64(c.HTTP.ReadTimeout),
		"http.idle_timeout": int64(c.HTTP.IdleTimeout), "http.shutdown_timeout": int64(c.HTTP.ShutdownTimeout),
		"http.max_conns": int64(c.HTTP.MaxConns), "rpc.max_batch": int64(c.RPC.MaxBatch),
		"rpc.batch_concurrency": int64(c.RPC.BatchConcurrency), "rpc.max_body": int64(c.RPC.MaxBody),
		"rpc.stdio_concurrency":  int64(c.RPC.StdioConcurrency),
		"rpc.max_batch_response": int64(c.RPC.MaxBatchResponse), "rpc.response_budget": int64(c.RPC.ResponseBudget), "store.max_value": int64(c.Store.MaxValue),
		"store.max_context_ttl": int64(c.Store.MaxContextTTL), "store.start_timeout": int64(c.Store.StartTimeout),
		"store.max_keys_per_session":     int64(c.Store.MaxKeysPerSession),
		"store.max_session_bytes":        int64(c.Store.MaxSessionBytes),
		"store.closed_session_retention": int64(c.Store.ClosedSessionRetention),
		"net.timeout":                    int64(c.Net.Timeout), "net.max_response": int64(c.Net.MaxResponse),
		"plans.max_steps": int64(c.Plans.MaxSteps), "plans.max_definition": int64(c.Plans.MaxDefinition),
		"plans.max_record": int64(c.Plans.MaxRecord), "plans.workers": int64(c.Plans.Workers),
		"plans.max_deliver": int64(c.Plans.MaxDeliver), "plans.ack_wait": int64(c.Plans.AckWait),
		"plans.retention": int64(c.Plans.Retention), "plans.max_bucket": int64(c.Plans.MaxBucket),
		"plans.max_timeout": int64(c.Plans.MaxTimeout), "plans.webhook_attempts": int64(c.Plans.WebhookAttempts),
		"plans.max_crashes": int64(c.Plans.MaxCrashes),
		"events.retention":  int64(c.Events.Retention), "events.max_bytes": int64(c.Events.MaxBytes),
		"events.dedupe_window": int64(c.Events.DedupeWindow), "events.max_subscribers": int64(c.Events.MaxSubscribers),
		"a2a.max_metadata": int64(c.A2A.MaxMetadata), "a2a.max_history": int64(c.A2A.MaxHistory),
		"a2a.max_list_bytes": int64(c.A2A.MaxListBytes), "a2a.context_idle": int64(c.A2A.ContextIdle),
		"a2a.input_timeout":     int64(c.A2A.InputTimeout),
		"a2a.push.max_per_task": int64(c.A2A.Push.MaxPerTask), "a2a.push.max_per_key": int64(c.A2A.Push.MaxPerKey),
		"a2a.push.timeout": int64(c.A2A.Push.Timeout), "a2a.push.max_attempts": int64(c.A2A.Push.MaxAttempts),
		"a2a.push.max_pending": int64(c.A2A.Push.MaxPending),
		"delivery.max_pending": int64(c.Delivery.MaxPending), "delivery.max_pending_per_key": int64(c.Delivery.MaxPendingPerKey),
		"delivery.concurrent_per_destination": int64(c.Delivery.ConcurrentPerDestination),
		"delivery.concurrent_per_key":         int64(c.Delivery.ConcurrentPerKey), "delivery.max_concurrent": int64(c.Delivery.MaxConcurrent),
		"a2a.max_bucket": int64(c.A2A.MaxBucket), "a2a.max_tasks_per_key": int64(c.A2A.MaxTasksPerKey),
		"plans.max_per_key":      int64(c.Plans.MaxPerKey),
		"sandbox.max_code_bytes": int64(c.Sandbox.MaxCodeBytes),
	}
	keys := make([]string, 0, len(positive))
	for key := range positive {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if positive[key] <= 0 {
			bad(key, "must be greater than zero")
		}
	}
	if d := c.Delivery; d.MaxPendingPerKey > d.MaxPending {
		bad("delivery.max_pending_per_key", "must not exceed delivery.max_pending")
	}
	if d := c.Delivery; d.ConcurrentPerKey > d.MaxConcurrent || d.ConcurrentPerDestination > d.MaxConcurrent {
		bad("delivery.concurrent_per_key", "and delivery.concurrent_per_destination must not exceed delivery.max_concurrent")
	}
	if c.Store.Replicas < 0 || c.Store.Replicas > 5 {
		bad("store.replicas", "must be 0 (automatic) or 1..5")
	}
	if c.Sandbox.CompileWorkers < 0 || c.Sandbox.CompileWorkers > 256 {
		bad("sandbox.compile_workers", "must be 0 (the number of cores) or 1..256")
	}
	if c.HTTP.WriteTimeout < 0 {
		bad("http.write_timeout", "must not be negative")
	}
	if err := c.Policy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config policy: %w", err))
	}
	if c.Net.MaxRedirects < 0 {
		bad("net.max_redirects", "must not be negative")
	}
	for i, s := range c.Net.AllowPrivate {
		if _, err := netip.ParsePrefix(s); err != nil {
			if _, err := netip.ParseAddr(s); err != nil {
				bad(fmt.Sprintf("net.allow_private[%d]", i), "%q is not an address or CIDR prefix", s)
			}
		}
	}
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateAgents()...)
	errs = append(errs, c.validateSources()...)
	errs = append(errs, c.validatePluginSettings()...)
	errs = append(errs, c.validateShares()...)
	errs = append(errs, c.validateGRPC()...)
	if c.Plans.MaxCrashes > 100 {
		bad("plans.max_crashes", "must be at most 100")
	}
	errs = append(errs, c.validateQuotas()...)
	errs = append(errs, c.validateLeases()...)
	if n := len(c.Plans.WebhookSecret); n != 0 && (n < 16 || n > 256) {
		bad("plans.webhook_secret", "must be 16..256 bytes (or empty: only plans that bring a webhook_secret may use webhooks)")
	}
	if c.Trust.RequireSignatures && len(c.Trust.Publishers) == 0 {
		bad("trust.require_signatures", "is on but trust.publishers lists no key: every plugin would be refused")
	}
	if n := len(c.Identity.KeyFile); n > 4 {
		bad("identity.key_file", "lists %d keys; at most 4 (one per algorithm, plus one being rotated in)", n)
	}
	if c.Events.DedupeWindow > c.Events.Retention {
		bad("events.dedupe_window", "must not exceed events.retention")
	}
	if e := c.Tracing.OTLPEndpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("tracing.otlp_endpoint", "%q is not an http(s) URL", e)
		}
	}
	if r := c.Tracing.SampleRatio; r < 0 || r > 1 {
		bad("tracing.sample_ratio", "%v is not between 0 and 1", r)
	}
	return errors.Join(errs...)
}
