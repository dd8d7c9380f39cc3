package config

import "time"

// Config is the whole host configuration. Defaults declares every key's
// default, once: internal packages take their section as it is, and the
// configuration reference (docs/reference/config.md) and
// examples/config/skillhost.yaml are checked against it
// (TestConfigDocumented).
type Config struct {
	// Listen is the HTTP address. Empty disables HTTP (stdio only).
	Listen string `koanf:"listen"`
	// Stdio serves the stdio transport on stdin/stdout.
	Stdio bool `koanf:"stdio"`
	// MCPStdio serves MCP (newline-delimited JSON-RPC, one client) on
	// stdin/stdout instead of the stdio transport.
	MCPStdio bool `koanf:"mcp_stdio"`
	// Plugins is the plugin folder the host loads and watches.
	Plugins string `koanf:"plugins"`
	// Data is the state directory (embedded NATS JetStream, compile cache).
	Data string `koanf:"data"`
	// NATS is a comma-separated list of NATS URLs; empty embeds a server.
	NATS string `koanf:"nats"`
	// PublicURL is the base URL published in Agent Cards; default http://<listen>.
	PublicURL string `koanf:"public_url"`
	// HotReload watches the plugin folder and applies changes live.
	HotReload bool `koanf:"hot_reload"`
	// PublishedPlugins serves, in cluster mode, the plugins published to
	// the cluster with `skillhost plugin publish`.
	PublishedPlugins bool `koanf:"published_plugins"`

	Log    Log    `koanf:"log"`
	HTTP   HTTP   `koanf:"http"`
	RPC    RPC    `koanf:"rpc"`
	Store  Store  `koanf:"store"`
	Policy Policy `koanf:"policy"`
	Net    Net    `koanf:"net"`
	// Sandbox bounds the memory of all plugin instances together.
	Sandbox Sandbox `koanf:"sandbox"`
	Plans   Plans   `koanf:"plans"`
	Auth    Auth    `koanf:"auth"`
	A2A     A2A     `koanf:"a2a"`
	// Delivery bounds the outbound deliveries (push notifications, plan
	// webhooks) per key, per destination and on the host.
	Delivery Delivery `koanf:"delivery"`
	Events   Events   `koanf:"events"`
	// MCP configures the MCP sessions of POST /mcp.
	MCP MCP `koanf:"mcp"`
	// GRPC serves the A2A gRPC binding on a listener of its own (off by
	// default).
	GRPC GRPC `koanf:"grpc"`
	// Tracing exports OpenTelemetry spans (off by default).
	Tracing Tracing `koanf:"tracing"`
	// Identity is the host's signing keys (cards, task provenance).
	Identity Identity `koanf:"identity"`
	// Trust is the plugin signature policy.
	Trust Trust `koanf:"trust"`
	// Agents configures remote A2A peers and nested agent calls.
	Agents Agents `koanf:"agents"`
	// Sources are plugin sources besides the plugin folder (OCI
	// registries).
	Sources PluginSources `koanf:"sources"`
	// PluginSettings are the operator's per-plugin settings, the YAML
	// file's plugins.<name> sections (when `plugins` is a mapping; its
	// entry "dir" is then the plugin folder), by plugin name. Default: none.
	PluginSettings map[string]PluginSettings `koanf:"-"`
}

// Tracing configures OpenTelemetry tracing: a span per JSON-RPC call and
// per sandbox call, exported over OTLP/HTTP.
type Tracing struct {
	// OTLPEndpoint is the collector's OTLP/HTTP URL
	// ("http://127.0.0.1:4318"; /v1/traces is added when the URL has no
	// path). Empty: tracing is off.
	OTLPEndpoint string `koanf:"otlp_endpoint"`
	// SampleRatio is the share of new traces recorded, 0..1; a caller's
	// sampled traceparent is always followed.
	SampleRatio float64 `koanf:"sample_ratio"`
}

// Identity configures the host's signing keys (docs/guides/signing.md).
type Identity struct {
	// KeyFile lists PEM private key files (skillhost keygen): one key, or an
	// Ed25519 and an ML-DSA-65 key for hybrid signatures. Empty: nothing is
	// signed and no JWKS is served.
	KeyFile []string `koanf:"key_file"`
}

// Trust is the plugin signature policy (docs/guides/signing.md, "Plugin signatures").
type Trust struct {
	// RequireSignatures refuses every plugin without a valid plugin.sig by
	// one of Publishers. A plugin whose signature is broken or no longer
	// matches its folder is refused either way.
	RequireSignatures bool `koanf:"require_signatures"`
	// Publishers are the PEM public key files of trusted publishers.
	Publishers []string `koanf:"publishers"`
}

// Sandbox configures the runtime that runs every plugin.
type Sandbox struct {
	// MaxLiveBytes caps the host memory all live plugin instances and
	// running calls may hold, counted at their worst case (linear memories
	// at their cap, tables, globals, wazero's call stack). 0: three quarters
	// of the memory available (the cgroup limit or the machine's RAM).
	MaxLiveBytes ByteSize `koanf:"max_live_bytes"`
	// MaxCodeBytes bounds the compiled plugin code held in memory (about
	// six times a module's size): past it, the code of the least recently
	// used plugins that run no call is released, and loaded again from the
	// compilation cache by their next call. Code in use is never released.
	MaxCodeBytes ByteSize `koanf:"max_code_bytes"`
	// CompileWorkers is how many plugins compile at once (in the background
	// after a start or a reload, and for calls, which go first). 0: the
	// number of cores the process may use.
	CompileWorkers int `koanf:"compile_workers"`
}

// Auth configures API keys and the per-key limits (docs/guides/security.md).
type Auth struct {
	// Keys are the API keys; empty: HTTP serves loopback clients only.
	Keys   []AuthKey  `koanf:"keys"`
	Limits AuthLimits `koanf:"limits"`
}

// AuthKey is one API key: its id, the hex SHA-256 of the key, its scopes
// and an optional rate ("100/s") overriding auth.limits.rate.
type AuthKey struct {
	ID     string   `koanf:"id"`
	SHA256 string   `koanf:"sha256"`
	Scopes []string `koanf:"scopes"`
	Rate   string   `koanf:"rate"`
}

// AuthLimits are the caps every API key gets (its session tokens share
// them). Rates are "N/s", "N/m" or "N/h".
type AuthLimits struct {
	Rate               string   `koanf:"rate"`
	SessionRate        string   `koanf:"session_rate"`
	MaxOpenSessions    int      `koanf:"max_open_sessions"`
	MaxConcurrentCalls int      `koanf:"max_concurrent_calls"`
	MaxContextBytes    ByteSize `koanf:"max_context_bytes"`
}

// A2A configures the A2A task store.
type A2A struct {
	// MaxMetadata caps the metadata of a message (and of the request
	// around it), stored with the task.
	MaxMetadata ByteSize `koanf:"max_metadata"`
	// MaxHistory caps the bytes of a task's stored message history.
	MaxHistory ByteSize `koanf:"max_history"`
	// MaxListBytes caps the task bytes one ListTasks call decodes and
	// returns; a page ends early (with a nextPageToken) when it is reached.
	MaxListBytes ByteSize `koanf:"max_list_bytes"`
	// ContextIdle closes an A2A context (the session its messages share)
	// unused this long.
	ContextIdle time.Duration `koanf:"context_idle"`
	// InputTimeout fails a task (reason input_timeout) that has waited
	// this long for a follow-up message (input-required, auth-required).
	InputTimeout time.Duration `koanf:"input_timeout"`
	// MaxBucket caps the disk of the tasks bucket (a changed size applies
	// to the existing bucket at the next start).
	MaxBucket ByteSize `koanf:"max_bucket"`
	// MaxTasksPerKey caps the tasks one API key (with its session tokens)
	// has stored; a new task beyond it is -32106 key_quota.
	MaxTasksPerKey int `koanf:"max_tasks_per_key"`
	// MaxTaskBytesPerKey caps the bytes of one key's stored tasks, a
	// running task counted at the largest task record; 0 = a quarter of
	// MaxBucket.
	MaxTaskBytesPerKey ByteSize `koanf:"max_task_bytes_per_key"`
	// Reserve is the room in the tasks bucket that new tasks leave for the
	// records of running ones (a new task beyond it is -32106
	// storage_full); 0 = an eighth of MaxBucket.
	Reserve ByteSize `koanf:"reserve"`
	// Push configures push notifications.
	Push Push `koanf:"push"`
	// MaxStreams caps the task streams (SendStreamingMessage,
	// SubscribeToTask, their v0.3 names and REST routes) open at once on
	// this host.
	MaxStreams int `koanf:"max_streams"`
	// MaxStreamsPerKey caps those one key holds (0: no per-key share).
	MaxStreamsPerKey int `koanf:"max_streams_per_key"`
	// LeaseTTL is how long a host may stay silent (no beat in the store,
	// no answer on NATS) before the tasks it runs are taken from it: ended
	// failed with reason host_lost, or run again elsewhere when their skill
	// is idempotent. Optional. Default: 15s (1s..1h).
	LeaseTTL time.Duration `koanf:"lease_ttl"`
	// LeaseSweep is how often each host looks for tasks whose host was
	// lost. Optional. Default: 5s (100ms..lease_ttl).
	LeaseSweep time.Duration `koanf:"lease_sweep"`
}

// Push configures A2A push notifications: task updates POSTed to the
// client's URL (guarded as http_fetch: net.allow_private opens private
// targets).
type Push struct {
	// MaxPerTask caps the push configs of one task.
	MaxPerTask int `koanf:"max_per_task"`
	// MaxPerKey caps the push configs one principal (API key) holds.
	MaxPerKey int `koanf:"max_per_key"`
	// Timeout bounds one POST.
	Timeout time.Duration `koanf:"timeout"`
	// MaxAttempts bounds the POSTs of one update (retried with backoff).
	MaxAttempts int `koanf:"max_attempts"`
	// MaxPending caps the push updates waiting to be delivered on one host
	// (within delivery.max_pending); beyond it the submitting key's oldest
	// waiting update is dropped (counted and logged).
	MaxPending int `koanf:"max_pending"`
}

// Delivery configures the outbound delivery service that POSTs A2A push
// notifications and plan webhooks (docs/guides/plans-and-events.md, "Outbound deliveries").
type Delivery struct {
	// MaxPending caps the deliveries waiting on one host, all keys
	// together; past it the submitting key loses its own oldest waiting
	// push update (a webhook waits in its stream instead).
	MaxPending int `koanf:"max_pending"`
	// MaxPendingPerKey caps the deliveries of one key waiting on one host,
	// the same way.
	MaxPendingPerKey int `koanf:"max_pending_per_key"`
	// ConcurrentPerDestination caps the POSTs to one destination (scheme,
	// host and port) running at once: a receiver that never answers holds
	// no more.
	ConcurrentPerDestination int `koanf:"concurrent_per_destination"`
	// ConcurrentPerKey caps the POSTs of one key running at once.
	ConcurrentPerKey int `koanf:"concurrent_per_key"`
	// MaxConcurrent caps the POSTs running at once on one host.
	MaxConcurrent int `koanf:"max_concurrent"`
}

// TLS is the certificate and key of the HTTPS listener (PEM files).
type TLS struct {
	CertFile string `koanf:"cert_file"`
	KeyFile  string `koanf:"key_file"`
}

// Events configures the event stream (GET /events): plan progress and
// agent notifications, kept in JetStream for resuming subscribers.
type Events struct {
	Retention      time.Duration `koanf:"retention"`
	MaxBytes       ByteSize      `koanf:"max_bytes"`
	DedupeWindow   time.Duration `koanf:"dedupe_window"`
	MaxSubscribers int           `koanf:"max_subscribers"`
	// MaxSubscribersPerKey caps the GET /events streams one key holds
	// (0: no per-key share).
	MaxSubscribersPerKey int `koanf:"max_subscribers_per_key"`
}

// Plans configures plan execution (`_cleveragents/plan/*`).
type Plans struct {
	MaxSteps      int           `koanf:"max_steps"`
	MaxDefinition ByteSize      `koanf:"max_definition"`
	MaxRecord     ByteSize      `koanf:"max_record"`
	Workers       int           `koanf:"workers"`
	MaxDeliver    int           `koanf:"max_deliver"`
	AckWait       time.Duration `koanf:"ack_wait"`
	Retention     time.Duration `koanf:"retention"`
	MaxBucket     ByteSize      `koanf:"max_bucket"`
	MaxTimeout    time.Duration `koanf:"max_timeout"`
	// WebhookSecret signs the webhooks of plans that bring no secret of
	// their own; empty refuses such webhooks.
	WebhookSecret string `koanf:"webhook_secret"`
	// WebhookAttempts bounds the delivery attempts of one webhook.
	WebhookAttempts int `koanf:"webhook_attempts"`
	// MaxCrashes is how often a plan step may be running when its host dies
	// before it is quarantined (the plan fails with reason quarantined
	// instead of the step running again). Default: 2.
	MaxCrashes int `koanf:"max_crashes"`
	// MaxPerKey caps the plans one API key (with its session tokens) has
	// stored; plan/create beyond it is -32106 key_quota.
	MaxPerKey int `koanf:"max_per_key"`
	// MaxBytesPerKey caps the bytes of one key's stored plans, an
	// executing plan counted at MaxRecord; 0 = a quarter of MaxBucket.
	MaxBytesPerKey ByteSize `koanf:"max_bytes_per_key"`
	// Reserve is the room in the plans bucket that plan/create and
	// plan/execute leave for the checkpoints of executing plans; 0 = an
	// eighth of MaxBucket.
	Reserve ByteSize `koanf:"reserve"`
}

// Log configures logging (to stderr).
type Log struct {
	Level  string `koanf:"level"`  // debug, info, warn, error
	Format string `koanf:"format"` // text or json
	// Access writes one access line per JSON-RPC call (info; warn when the
	// host or a plugin failed it) and one per HTTP request that carried no
	// call (other routes, refusals before a method ran).
	Access bool `koanf:"access"`
}

// HTTP configures the Fiber server.
type HTTP struct {
	BodyLimit       ByteSize      `koanf:"body_limit"`
	ReadTimeout     time.Duration `koanf:"read_timeout"`
	WriteTimeout    time.Duration `koanf:"write_timeout"`
	IdleTimeout     time.Duration `koanf:"idle_timeout"`
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	MaxConns        int           `koanf:"max_conns"`
	// MaxConnsPerAddr caps the connections of one client address (IPv6:
	// one /64) within MaxConns (0: no per-address share, e.g. behind a
	// proxy).
	MaxConnsPerAddr int `koanf:"max_conns_per_addr"`
	// ReservedConns are connections past MaxConns (or past an address's
	// share) that are answered only on /health and the public documents
	// (cards, JWKS), then closed: a full host still answers its health.
	ReservedConns int `koanf:"reserved_conns"`
	// TLS serves HTTPS (TLS 1.2+) when both files are set.
	TLS TLS `koanf:"tls"`
	// AllowInsecureRemote permits plain HTTP on a non-loopback listen
	// address (e.g. behind a TLS-terminating proxy); without it start fails.
	AllowInsecureRemote bool `koanf:"allow_insecure_remote"`
	// AllowedOrigins are the browser origins ("https://app.example") whose
	// requests are accepted besides the host's own; others get 403.
	AllowedOrigins []string `koanf:"allowed_origins"`
	// AllowedHosts are extra Host header values ("name" or "name:port")
	// accepted when the host serves loopback clients without keys (DNS
	// rebinding guard).
	AllowedHosts []string `koanf:"allowed_hosts"`
	// Pprof serves the Go profiler under /debug/pprof/ with the access
	// rules of /metrics (off by default).
	Pprof bool `koanf:"pprof"`
}

// RPC configures the JSON-RPC engine shared by every transport.
type RPC struct {
	MaxBatch         int      `koanf:"max_batch"`
	BatchConcurrency int      `koanf:"batch_concurrency"`
	MaxBody          ByteSize `koanf:"max_body"`
	StdioConcurrency int      `koanf:"stdio_concurrency"`
	// MaxBatchResponse caps the total size of one batch's responses; the
	// elements past it get -32106 output_limit.
	MaxBatchResponse ByteSize `koanf:"max_batch_response"`
	// ResponseBudget caps the response bytes the host holds for all clients
	// together until they are written; a response past it gets -32106
	// response_budget.
	ResponseBudget ByteSize `koanf:"response_budget"`
	// MaxRunningCalls caps the calls (and A2A tasks) running at once on
	// this host, every principal together; a key's own share is
	// auth.limits.max_concurrent_calls.
	MaxRunningCalls int `koanf:"max_running_calls"`
}

// Store configures sessions and context values.
type Store struct {
	MaxValue      ByteSize      `koanf:"max_value"`
	MaxContextTTL time.Duration `koanf:"max_context_ttl"`
	// Replicas is the replication factor of every bucket and stream; 0
	// chooses: 1 embedded or on a single NATS server, 3 on a cluster.
	Replicas int `koanf:"replicas"`
	// StartTimeout bounds how long the host waits at start for NATS
	// JetStream to become ready (retrying, logged).
	StartTimeout time.Duration `koanf:"start_timeout"`
	// MaxKeysPerSession caps the context values one session holds.
	MaxKeysPerSession int `koanf:"max_keys_per_session"`
	// MaxSessionBytes caps the total bytes (key plus value) of one
	// session's context values.
	MaxSessionBytes ByteSize `koanf:"max_session_bytes"`
	// ClosedSessionRetention is how long a closed session's id stays
	// reserved before it may be reused.
	ClosedSessionRetention time.Duration `koanf:"closed_session_retention"`
}

// Net configures the http_fetch host function.
type Net struct {
	AllowPrivate []string      `koanf:"allow_private"`
	Timeout      time.Duration `koanf:"timeout"`
	MaxResponse  ByteSize      `koanf:"max_response"`
	MaxRedirects int           `koanf:"max_redirects"`
}

// Defaults returns the configuration used when nothing overrides it.
func Defaults() Config {
	return Config{
		Listen:           "127.0.0.1:8080",
		Plugins:          "plugins",
		Data:             "data",
		HotReload:        true,
		PublishedPlugins: true,
		Log:              Log{Level: "info", Format: "text", Access: true},
		HTTP: HTTP{
			BodyLimit:       MiB,
			ReadTimeout:     10 * time.Second,
			WriteTimeout:    5 * time.Minute,
			IdleTimeout:     60 * time.Second,
			ShutdownTimeout: 30 * time.Second,
			MaxConns:        1024,
			MaxConnsPerAddr: 256,
			ReservedConns:   16,
		},
		RPC: RPC{MaxBatch: 64, BatchConcurrency: 8, MaxBody: MiB, StdioConcurrency: 1,
			MaxBatchResponse: 8 * MiB, ResponseBudget: 256 * MiB, MaxRunningCalls: 1024},
		Store: Store{
			MaxValue: MiB, MaxContextTTL: 30 * 24 * time.Hour, Replicas: 0, StartTimeout: time.Minute,
			MaxKeysPerSession: 1000, MaxSessionBytes: 16 * MiB, ClosedSessionRetention: 30 * 24 * time.Hour,
		},
		Policy:  DefaultPolicy(),
		Sandbox: Sandbox{MaxCodeBytes: 256 * MiB},
		Net:     Net{Timeout: 10 * time.Second, MaxResponse: MiB, MaxRedirects: 5},
		Plans: Plans{
			MaxSteps: 100, MaxDefinition: 256 * KiB, MaxRecord: MiB, Workers: 4, MaxDeliver: 5, MaxCrashes: 2,
			AckWait: 10 * time.Second, Retention: 7 * 24 * time.Hour, MaxBucket: GiB, MaxTimeout: 24 * time.Hour,
			WebhookAttempts: 5, MaxPerKey: 10000,
		},
		Auth: Auth{Keys: []AuthKey{}, Limits: AuthLimits{
			Rate: "100/s", SessionRate: "60/m", MaxOpenSessions: 16, MaxConcurrentCalls: 16, MaxContextBytes: 64 * MiB,
		}},
		A2A: A2A{MaxMetadata: 64 * KiB, MaxHistory: MiB, MaxListBytes: 4 * MiB, ContextIdle: 24 * time.Hour,
			InputTimeout: 24 * time.Hour, MaxBucket: GiB, MaxTasksPerKey: 10000,
			Push:       Push{MaxPerTask: 10, MaxPerKey: 100, Timeout: 10 * time.Second, MaxAttempts: 5, MaxPending: 1024},
			MaxStreams: 1024, MaxStreamsPerKey: 256, LeaseTTL: 15 * time.Second, LeaseSweep: 5 * time.Second},
		Delivery: Delivery{MaxPending: 4096, MaxPendingPerKey: 256, ConcurrentPerDestination: 4, ConcurrentPerKey: 8, MaxConcurrent: 64},
		Events: Events{Retention: 24 * time.Hour, MaxBytes: 256 * MiB, DedupeWindow: time.Hour, MaxSubscribers: 256,
			MaxSubscribersPerKey: 64},
		MCP:      MCP{MaxSessions: 1024, MaxSessionsPerKey: 256},
		GRPC:     DefaultGRPC(),
		Tracing:  Tracing{SampleRatio: 1},
		Identity: Identity{KeyFile: []string{}},
		Trust:    Trust{Publishers: []string{}},
		Agents:   Agents{Remote: []RemoteAgent{}, MaxCallDepth: DefaultMaxCallDepth},
		Sources:  PluginSources{OCI: []OCISource{}},
	}
}
