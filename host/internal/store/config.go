package store

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
)

// Defaults and hard limits of Config.
const (
	// DefaultReplicas is 0: replicas are chosen at Open (see Config.Replicas).
	DefaultReplicas = 0
	// ClusterReplicas is the replication factor chosen on a NATS cluster of
	// at least that many servers.
	ClusterReplicas       = 3
	DefaultStartTimeout   = time.Minute
	DefaultMaxValueBytes  = 1 << 20             // 1 MiB
	DefaultMaxContextTTL  = 30 * 24 * time.Hour // 30 days
	DefaultMaxBucketBytes = 1 << 30             // 1 GiB per bucket

	DefaultMaxKeysPerSession      = 1000
	DefaultMaxSessionBytes        = 16 << 20            // 16 MiB
	DefaultClosedSessionRetention = 30 * 24 * time.Hour // 30 days

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

// Config configures Open. The zero value (plus a DataDir) is an embedded,
// single-node store.
type Config struct {
	// URL is the NATS server or cluster to connect to, comma-separated
	// ("nats://a:4222,nats://b:4222"). Optional. Default: "" starts an
	// embedded server in this process.
	URL string
	// DataDir holds the embedded server's JetStream files under
	// DataDir/nats. Required when URL is empty and Conn nil; unused
	// otherwise.
	DataDir string
	// Conn is an existing connection to a NATS server with JetStream, used
	// instead of URL or an embedded server (a program embedding the host
	// shares its own). The caller owns it: Close leaves it open. Optional.
	Conn *nats.Conn
	// Replicas is the replication factor of the buckets Open creates and of
	// buckets made through KeyValue with Replicas 0. Optional. Default: 0,
	// which chooses at Open: 1 for the embedded server and for a single NATS
	// server, 3 on a cluster (or the number of servers the cluster reports
	// when it is smaller). An existing bucket with fewer replicas is raised
	// to it. Must not exceed the cluster size (1 when embedded).
	Replicas int
	// StartTimeout bounds how long Open waits for JetStream to become ready
	// (servers not reachable yet, a cluster still electing its leader),
	// retrying with backoff and logging each failed attempt. Optional.
	// Default: 1m.
	StartTimeout time.Duration
	// Logger receives connection and server events. Optional. Default: none.
	// The embedded server's notices are logged at debug level.
	Logger *slog.Logger
	// MaxValueBytes caps a context value and a session's initial context.
	// Optional. Default: 1 MiB. At most 8 MiB.
	MaxValueBytes int
	// MaxContextTTL caps the ttl of a context value. Optional. Default: 30 days.
	MaxContextTTL time.Duration
	// MaxBucketBytes caps the disk used by each of the sessions and context
	// buckets; writes beyond it fail with ResourceExhausted (storage_full).
	// Optional. Default: 1 GiB. -1 means unlimited.
	MaxBucketBytes int64
	// MaxKeysPerSession caps how many context values one session holds;
	// a set of a new key beyond it fails with ResourceExhausted
	// (session_quota). Optional. Default: 1000. At most 10000.
	MaxKeysPerSession int
	// MaxSessionBytes caps the total size of one session's context values
	// (each value counts its key plus its compacted JSON); a set that would
	// go beyond it fails with ResourceExhausted (session_quota). Optional.
	// Default: 16 MiB. At least MaxValueBytes.
	MaxSessionBytes int64
	// ClosedSessionRetention is how long a closed session's record is kept
	// after the close; while kept, its id cannot be reused (session_closed),
	// after it the id is free again. Needs nats-server 2.11+ (per-message
	// TTL); older servers keep closed records forever. Optional.
	// Default: 30 days.
	ClosedSessionRetention time.Duration
	// SessionLease is how long, on a NATS cluster, a host trusts an active
	// session it cached, and so how long a session close waits before it
	// returns (then no host accepts a call for the closed session). Unused
	// embedded, where closes evict the cache directly. Optional. Default:
	// DefaultSessionLease (250ms).
	SessionLease time.Duration
}

// withDefaults returns cfg with defaults applied, or an error naming the
// first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.MaxValueBytes == 0 {
		cfg.MaxValueBytes = DefaultMaxValueBytes
	}
	if cfg.MaxContextTTL == 0 {
		cfg.MaxContextTTL = DefaultMaxContextTTL
	}
	if cfg.MaxBucketBytes == 0 {
		cfg.MaxBucketBytes = DefaultMaxBucketBytes
	}
	if cfg.MaxKeysPerSession == 0 {
		cfg.MaxKeysPerSession = DefaultMaxKeysPerSession
	}
	if cfg.MaxSessionBytes == 0 {
		cfg.MaxSessionBytes = DefaultMaxSessionBytes
	}
	if cfg.ClosedSessionRetention == 0 {
		cfg.ClosedSessionRetention = DefaultClosedSessionRetention
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
		return cfg, fmt.Errorf("store: Replicas %d: must be 0 (auto) or 1..5", cfg.Replicas)
	case cfg.URL == "" && cfg.Conn == nil && cfg.Replicas > 1:
		return cfg, fmt.Errorf("store: Replicas %d: the embedded server is a single node, use 1", cfg.Replicas)
	case cfg.MaxValueBytes < 1 || cfg.MaxValueBytes > MaxValueBytesLimit:
		return cfg, fmt.Errorf("store: MaxValueBytes %d: must be 1..%d", cfg.MaxValueBytes, MaxValueBytesLimit)
	case cfg.StartTimeout < 0:
		return cfg, fmt.Errorf("store: StartTimeout %v: must not be negative", cfg.StartTimeout)
	case cfg.MaxContextTTL < time.Second:
		return cfg, fmt.Errorf("store: MaxContextTTL %v: must be at least 1s", cfg.MaxContextTTL)
	case cfg.MaxBucketBytes < -1 || (cfg.MaxBucketBytes > 0 && cfg.MaxBucketBytes < int64(cfg.MaxValueBytes)):
		return cfg, fmt.Errorf("store: MaxBucketBytes %d: must be -1 or at least MaxValueBytes", cfg.MaxBucketBytes)
	case cfg.MaxKeysPerSession < 1 || cfg.MaxKeysPerSession > MaxKeysPerSessionLimit:
		return cfg, fmt.Errorf("store: MaxKeysPerSession %d: must be 1..%d", cfg.MaxKeysPerSession, MaxKeysPerSessionLimit)
	case cfg.MaxSessionBytes < int64(cfg.MaxValueBytes):
		return cfg, fmt.Errorf("store: MaxSessionBytes %d: must be at least MaxValueBytes (%d)", cfg.MaxSessionBytes, cfg.MaxValueBytes)
	case cfg.SessionLease < time.Millisecond || cfg.SessionLease > time.Minute:
		return cfg, fmt.Errorf("store: SessionLease %v: must be 1ms..1m", cfg.SessionLease)
	case cfg.ClosedSessionRetention < time.Second:
		return cfg, fmt.Errorf("store: ClosedSessionRetention %v: must be at least 1s", cfg.ClosedSessionRetention)
	}
	return cfg, nil
}

// maxRecord is the largest record the store writes: a value or initial
// context plus its envelope, or a session's usage ledger.
func (cfg Config) maxRecord() int {
	return max(cfg.MaxValueBytes, cfg.MaxKeysPerSession*ledgerEntryMaxBytes) + recordOverhead
}
