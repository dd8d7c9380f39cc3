package store

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillhost/skillhost/host/config"
)

// Hard limits of Config, and the defaults of what are not configuration
// keys.
const (
	// ClusterReplicas is the replication factor chosen on a NATS cluster of
	// at least that many servers.
	ClusterReplicas = 3
	// DefaultMaxBucketBytes caps each of the sessions and context buckets
	// (1 GiB) unless Config.MaxBucketBytes says otherwise.
	DefaultMaxBucketBytes = 1 << 30

	// MaxKeysPerSessionLimit is the largest MaxKeysPerSession Open accepts:
	// a session's usage ledger holds one entry per key in one record.
	MaxKeysPerSessionLimit = 10000

	// MaxValueBytesLimit is the largest MaxValueBytes Open accepts: NATS
	// messages beyond a few MiB hurt the whole cluster.
	MaxValueBytesLimit = 8 << 20

	// MaxSessionIDLen is the longest session id accepted.
	MaxSessionIDLen = 128
	// MaxContextKeyBytes is the longest context key accepted, in bytes.
	MaxContextKeyBytes = 256
	// MaxAgentIDBytes is the longest agent id a session may carry.
	MaxAgentIDBytes = 256

	// recordOverhead is room for the JSON envelope around a value (ids,
	// timestamps, status) on top of MaxValueBytes.
	recordOverhead = 64 << 10
)

// Config configures Open: the store.* section of the configuration and
// where the server is.
type Config struct {
	// Store is the store.* section: value and TTL caps, per-session quotas,
	// replicas, start timeout, closed-session retention. Optional: the zero
	// section is config.Defaults().Store (the whole section, never field by
	// field). Validated by config.Config.Validate and again by Open.
	config.Store
	// URL is the NATS server or cluster to connect to, comma-separated
	// ("nats://a:4222,nats://b:4222"). Optional. Default: "" starts an
	// embedded server in this process.
	URL string
	// DataDir holds the embedded server's JetStream files under
	// DataDir/nats (required when URL is empty and Conn nil) and, with any
	// connection, the boot file naming the boot that used the directory
	// before this one (boot.go: a restarted host ends its previous boot's
	// tasks at once). Optional with URL or Conn: without it the previous
	// boot's tasks wait for their lease to lapse.
	DataDir string
	// Conn is an existing connection to a NATS server with JetStream, used
	// instead of URL or an embedded server (a program embedding the host
	// shares its own). The caller owns it: Close leaves it open. Optional.
	Conn *nats.Conn
	// Logger receives connection and server events. Optional. Default: none.
	// The embedded server's notices are logged at debug level.
	Logger *slog.Logger
	// MaxBucketBytes caps the disk used by each of the sessions and context
	// buckets; writes beyond it fail with ResourceExhausted (storage_full).
	// Optional. Default: DefaultMaxBucketBytes. -1 means unlimited.
	MaxBucketBytes int64
	// SessionLease is how long, on a NATS cluster, a host trusts an active
	// session it cached, and so how long a session close waits before it
	// returns (then no host accepts a call for the closed session). Unused
	// embedded, where closes evict the cache directly. Optional. Default:
	// DefaultSessionLease (250ms).
	SessionLease time.Duration
}

// The store.* keys, as Open uses them (Config.Store):
//   - Replicas is the replication factor of the buckets Open creates and of
//     buckets made through KeyValue with Replicas 0; 0 chooses at Open: 1
//     for the embedded server and for a single NATS server, 3 on a cluster
//     (or the number of servers the cluster reports when it is smaller).
//     An existing bucket with fewer replicas is raised to it. Must not
//     exceed the cluster size (1 when embedded).
//   - StartTimeout bounds how long Open waits for JetStream to become ready
//     (servers not reachable yet, a cluster still electing its leader),
//     retrying with backoff and logging each failed attempt.
//   - MaxValue caps a context value and a session's initial context (at
//     most MaxValueBytesLimit); MaxContextTTL caps the ttl of a value.
//   - MaxKeysPerSession caps how many context values one session holds (at
//     most MaxKeysPerSessionLimit), MaxSessionBytes the total size of one
//     session's values (each counts its key plus its compacted JSON; at
//     least MaxValue): a set beyond either fails with ResourceExhausted
//     (session_quota).
//   - ClosedSessionRetention is how long a closed session's record is kept
//     after the close; while kept, its id cannot be reused
//     (session_closed), after it the id is free again. Needs nats-server
//     2.11+ (per-message TTL); older servers keep closed records forever.

// withDefaults returns cfg with defaults applied, or an error naming the
// first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Store == (config.Store{}) {
		cfg.Store = config.Defaults().Store
	}
	if cfg.MaxBucketBytes == 0 {
		cfg.MaxBucketBytes = DefaultMaxBucketBytes
	}
	if cfg.SessionLease == 0 {
		cfg.SessionLease = DefaultSessionLease
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.URL == "" && cfg.Conn == nil && cfg.DataDir == "":
		return cfg, fmt.Errorf("store: DataDir is required for the embedded server")
	case cfg.Replicas < 0 || cfg.Replicas > 5:
		return cfg, fmt.Errorf("store: store.replicas %d: must be 0 (auto) or 1..5", cfg.Replicas)
	case cfg.URL == "" && cfg.Conn == nil && cfg.Replicas > 1:
		return cfg, fmt.Errorf("store: store.replicas %d: the embedded server is a single node, use 1", cfg.Replicas)
	case cfg.MaxValue < 1 || cfg.MaxValue > MaxValueBytesLimit:
		return cfg, fmt.Errorf("store: store.max_value %d: must be 1..%d", cfg.MaxValue, MaxValueBytesLimit)
	case cfg.StartTimeout < 0:
		return cfg, fmt.Errorf("store: store.start_timeout %v: must not be negative", cfg.StartTimeout)
	case cfg.MaxContextTTL < time.Second:
		return cfg, fmt.Errorf("store: store.max_context_ttl %v: must be at least 1s", cfg.MaxContextTTL)
	case cfg.MaxBucketBytes < -1 || (cfg.MaxBucketBytes > 0 && cfg.MaxBucketBytes < int64(cfg.MaxValue)):
		return cfg, fmt.Errorf("store: MaxBucketBytes %d: must be -1 or at least store.max_value", cfg.MaxBucketBytes)
	case cfg.MaxKeysPerSession < 1 || cfg.MaxKeysPerSession > MaxKeysPerSessionLimit:
		return cfg, fmt.Errorf("store: store.max_keys_per_session %d: must be 1..%d", cfg.MaxKeysPerSession, MaxKeysPerSessionLimit)
	case cfg.MaxSessionBytes < cfg.MaxValue:
		return cfg, fmt.Errorf("store: store.max_session_bytes %d: must be at least store.max_value (%d)", cfg.MaxSessionBytes, cfg.MaxValue)
	case cfg.SessionLease < time.Millisecond || cfg.SessionLease > time.Minute:
		return cfg, fmt.Errorf("store: SessionLease %v: must be 1ms..1m", cfg.SessionLease)
	case cfg.ClosedSessionRetention < time.Second:
		return cfg, fmt.Errorf("store: store.closed_session_retention %v: must be at least 1s", cfg.ClosedSessionRetention)
	}
	return cfg, nil
}

// maxRecord is the largest record the store writes: a value or initial
// context plus its envelope, or a session's usage ledger.
func (cfg Config) maxRecord() int {
	return max(int(cfg.MaxValue), cfg.MaxKeysPerSession*ledgerEntryMaxBytes) + recordOverhead
}
