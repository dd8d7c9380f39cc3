package config

import (
	"time"

	"github.com/skillhost/skillhost/host/internal/auth"
)

// Config is the whole host configuration. Every field is documented in the
// README ("Configuration") with its default; Defaults returns those values.
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
	Events  Events  `koanf:"events"`
	// Tracing exports OpenTelemetry spans (off by default).
	Tracing Tracing `koanf:"tracing"`
	// Identity is the host's signing keys (cards, task provenance).
	Identity Identity `koanf:"identity"`
	// Trust is the plugin signature policy.
	Trust Trust `koanf:"trust"`
	// Agents configures remote A2A peers and nested agent calls.
	Agents Agents `koanf:"agents"`
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

// Identity configures the host's signing keys (README "Signing").
type Identity struct {
	// KeyFile lists PEM private key files (skillhost keygen): one key, or an
	// Ed25519 and an ML-DSA-65 key for hybrid signatures. Empty: nothing is
	// signed and no JWKS is served.
	KeyFile []string `koanf:"key_file"`
}

// Trust is the plugin signature policy (README "Plugin signatures").
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

// Auth configures API keys and the per-key limits (README "Security").
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
	// Push configures push notifications.
	Push Push `koanf:"push"`
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
	// MaxPending caps the updates waiting to be delivered on one host;
	// beyond it an update is dropped (and logged).
	MaxPending int `koanf:"max_pending"`
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
		},
		RPC: RPC{MaxBatch: 64, BatchConcurrency: 8, MaxBody: MiB, StdioConcurrency: 1,
			MaxBatchResponse: 8 * MiB, ResponseBudget: 256 * MiB},
		Store: Store{
			MaxValue: MiB, MaxContextTTL: 30 * 24 * time.Hour, Replicas: 0, StartTimeout: time.Minute,
			MaxKeysPerSession: 1000, MaxSessionBytes: 16 * MiB, ClosedSessionRetention: 30 * 24 * time.Hour,
		},
		Policy:  DefaultPolicy(),
		Sandbox: Sandbox{MaxCodeBytes: 256 * MiB},
		Net:     Net{Timeout: 10 * time.Second, MaxResponse: MiB, MaxRedirects: 5},
		Plans: Plans{
			MaxSteps: 100, MaxDefinition: 256 * KiB, MaxRecord: MiB, Workers: 4, MaxDeliver: 5,
			AckWait: 10 * time.Second, Retention: 7 * 24 * time.Hour, MaxBucket: GiB, MaxTimeout: 24 * time.Hour,
			WebhookAttempts: 5,
		},
		Auth: Auth{Keys: []AuthKey{}, Limits: AuthLimits{
			Rate: auth.DefaultRate, SessionRate: auth.DefaultSessionRate, MaxOpenSessions: auth.DefaultMaxOpenSessions,
			MaxConcurrentCalls: auth.DefaultMaxConcurrentCalls, MaxContextBytes: auth.DefaultMaxContextBytes,
		}},
		A2A: A2A{MaxMetadata: 64 * KiB, MaxHistory: MiB, MaxListBytes: 4 * MiB, ContextIdle: 24 * time.Hour,
			Push: Push{MaxPerTask: 10, MaxPerKey: 100, Timeout: 10 * time.Second, MaxAttempts: 5, MaxPending: 1024}},
		Events:   Events{Retention: 24 * time.Hour, MaxBytes: 256 * MiB, DedupeWindow: time.Hour, MaxSubscribers: 256},
		Tracing:  Tracing{SampleRatio: 1},
		Identity: Identity{KeyFile: []string{}},
		Trust:    Trust{Publishers: []string{}},
		Agents:   Agents{Remote: []RemoteAgent{}, MaxCallDepth: DefaultMaxCallDepth},
	}
}
