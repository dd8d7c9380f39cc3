package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket names. They are part of the on-disk and on-cluster layout.
const (
	SessionsBucket = "skillhost_sessions"
	ContextBucket  = "skillhost_context"
)

// limitMarkerTTL is how long a delete marker left by an expired context key
// is kept (watchers see it; Get treats it as absent).
const limitMarkerTTL = 5 * time.Minute

// Store is skillhost's state in NATS JetStream. It is safe for concurrent use.
type Store struct {
	cfg      Config
	log      *slog.Logger
	srv      *server.Server // nil when connected to an external cluster
	unlock   func()         // releases the embedded data dir lock
	nc       *nats.Conn
	external bool               // nc is Config.Conn: the caller's to close
	bootSub  *nats.Subscription // answers this boot's liveness (boot.go)
	boot     string             // this Open's boot id (boot.go)
	prev     string             // the boot before it in the same data directory ("" if none known)
	hostname string             // os.Hostname at Open, recorded in runs
	closed   chan struct{}      // closed by the connection's ClosedHandler
	js       jetstream.JetStream
	sessions jetstream.KeyValue
	values   jetstream.KeyValue  // the context bucket
	owners   *Bucket[ownerIndex] // owner indexes, in the sessions bucket (owner.go)
	ledgers  *Bucket[ledger]     // session usage ledgers, in the context bucket (quota.go)
	// valuesStream is the context bucket's stream, for last-sequence reads
	// and per-session purges.
	valuesStream jetstream.Stream
	// keyTTL reports whether the context bucket accepts per-key TTLs
	// (nats-server 2.11+); without it expiry is enforced only on read.
	keyTTL bool
	// replicas is the replication factor chosen at Open (resolveReplicas).
	replicas int
	// maxPayload is the server's max_payload, read at Open.
	maxPayload int64
	// maxValue is the effective value limit: MaxValueBytes, lowered to fit
	// maxPayload when needed; valueLimit says which, for error messages.
	maxValue   int
	valueLimit string
	// cache holds active sessions for the session gate (sessioncache.go).
	cache *sessionCache

	closeOnce sync.Once
	closeErr  error

	hooksMu    sync.Mutex
	reconnects map[int]func() // OnReconnect callbacks
	nextHook   int
}

// Open connects to NATS (starting an embedded server when cfg.URL is empty)
// and creates or updates the sessions and context buckets.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger, closed: make(chan struct{})}
	if cfg.URL == "" && cfg.Conn == nil {
		s.cache = newSessionCache(0) // the only writer: closes evict directly
	} else {
		s.cache = newSessionCache(cfg.SessionLease)
	}
	if cfg.Conn != nil {
		s.nc, s.external = cfg.Conn, true
		return s.start(ctx)
	}
	opts := []nats.Option{
		nats.Name("skillhost"),
		nats.ClosedHandler(func(*nats.Conn) { close(s.closed) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				s.log.Warn("nats: disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			s.log.Info("nats: reconnected", "url", nc.ConnectedUrlRedacted())
			s.reconnected()
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { s.log.Warn("nats: async error", "err", err) }),
	}
	url := cfg.URL
	if url == "" {
		if s.srv, s.unlock, err = startEmbedded(ctx, cfg); err != nil {
			return nil, err
		}
		opts = append(opts, nats.InProcessServer(s.srv))
		url = s.srv.ClientURL()
	} else {
		opts = append(opts,
			nats.MaxReconnects(-1),          // a host outlives cluster restarts
			nats.RetryOnFailedConnect(true), // and may start before the cluster
			nats.ReconnectWait(500*time.Millisecond),
			nats.ReconnectJitter(250*time.Millisecond, time.Second),
			nats.Timeout(5*time.Second),
			// A connection that stops answering (a half-open TCP link:
			// packets vanish, nothing is reset) is given up after about
			// pingInterval × (maxPingsOut+1) and reconnected, instead of
			// nats.go's default of minutes (2 min × 2).
			nats.PingInterval(pingInterval),
			nats.MaxPingsOutstanding(maxPingsOut),
		)
	}
	if s.nc, err = nats.Connect(url, opts...); err != nil {
		s.shutdownServer()
		return nil, fmt.Errorf("store: connect: %w", err) // no URL: it may hold credentials
	}
	return s.start(ctx)
}

// start answers this boot's liveness and waits for JetStream on the
// connection.
func (s *Store) start(ctx context.Context) (_ *Store, err error) {
	if err := s.answerBoot(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("store: jetstream: %w", err)
	}
	if err := s.waitReady(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// init binds the buckets once JetStream answers; waitReady retries it.
func (s *Store) init(ctx context.Context) error {
	info, err := s.js.AccountInfo(ctx)
	if err != nil {
		return fmt.Errorf("store: jetstream account: %w", err)
	}
	if err := s.fitPayload(); err != nil {
		return err
	}
	maxRecord := int32(min(int64(s.cfg.maxRecord()), s.MaxRecordBytes()))
	s.resolveReplicas()
	// Per-message TTL needs JetStream API level 1 (nats-server 2.11+).
	// Without it expiry is enforced on read only.
	s.keyTTL = info.API.Level >= 1
	// Closed-session records expire through a per-message TTL; no delete
	// marker is needed (nobody watches the sessions bucket).
	if s.sessions, err = s.ensureBucket(ctx, bucketSpec{
		name: SessionsBucket, description: "skillhost sessions", maxValue: maxRecord, ttl: s.keyTTL,
	}); err != nil {
		return err
	}
	if s.values, err = s.ensureBucket(ctx, bucketSpec{
		name: ContextBucket, description: "skillhost session context (per-key TTL)", maxValue: maxRecord,
		ttl: s.keyTTL, markers: s.keyTTL,
	}); err != nil {
		return err
	}
	own := BucketConfig{What: "owner index", Retries: quotaRetries, Contended: func(string) error { return errBusy }}
	s.owners = newBucket[ownerIndex](s, s.sessions, own, marshal)
	led := BucketConfig{What: "usage ledger", Retries: quotaRetries, Contended: func(string) error { return errBusy }}
	s.ledgers = newBucket[ledger](s, s.values, led, marshal)
	if s.valuesStream, err = s.js.Stream(ctx, "KV_"+ContextBucket); err != nil {
		return fmt.Errorf("store: context stream: %w", err)
	}
	if !s.keyTTL {
		s.log.Warn("nats: server lacks per-message TTL (needs 2.11+); expired context is hidden on read and deleted lazily, " +
			"and closed sessions are kept forever")
	}
	return nil
}

// KeyValue binds the bucket cfg.Bucket if it exists (its stored
// configuration wins, but for MaxBytes) and creates it from cfg otherwise.
// Replicas 0 means the store's Replicas; a MaxValueSize is capped at
// MaxRecordBytes. An existing bucket with fewer replicas than asked is
// raised (see EnsureReplicas), and one with another MaxBytes than a
// non-zero cfg.MaxBytes takes it (a configured bucket size applies at the
// next start; KV buckets discard new writes, so a smaller size never drops
// a record, it refuses writes until records expire). For
// tasks, plans and other packages that keep state next to sessions; to
// change an existing bucket's configuration otherwise use
// JetStream().CreateOrUpdateKeyValue.
func (s *Store) KeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = s.replicas
	}
	if cfg.MaxValueSize > 0 {
		cfg.MaxValueSize = min(cfg.MaxValueSize, int32(s.MaxRecordBytes()))
	}
	var kv jetstream.KeyValue
	err := s.Retry(ctx, "bucket "+cfg.Bucket, func(ctx context.Context) error {
		_, err := s.js.Stream(ctx, "KV_"+cfg.Bucket)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = s.js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) { // created concurrently
				err = nil
			}
		}
		// Created now or long ago: raise its replicas if asked for more, and
		// read from the leader when replicated (see ensureBucket). Both
		// before binding, which caches the read mode.
		if err == nil {
			err = s.EnsureReplicas(ctx, "KV_"+cfg.Bucket, cfg.Replicas)
		}
		if err == nil && cfg.MaxBytes != 0 {
			err = s.ensureMaxBytes(ctx, "KV_"+cfg.Bucket, cfg.MaxBytes)
		}
		if err == nil {
			kv, err = s.js.KeyValue(ctx, cfg.Bucket)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// ObjectStore binds the object store cfg.Bucket, creating it from cfg when
// missing. Replicas 0 means the store's; an existing store with fewer
// replicas is raised (see EnsureReplicas).
func (s *Store) ObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = s.replicas
	}
	var obj jetstream.ObjectStore
	err := s.Retry(ctx, "object store "+cfg.Bucket, func(ctx context.Context) error {
		_, err := s.js.Stream(ctx, "OBJ_"+cfg.Bucket)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = s.js.CreateObjectStore(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) { // created concurrently
				err = nil
			}
		}
		if err == nil { // before binding, which caches the read mode
			err = s.EnsureReplicas(ctx, "OBJ_"+cfg.Bucket, cfg.Replicas)
		}
		if err == nil {
			obj, err = s.js.ObjectStore(ctx, cfg.Bucket)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: object store %s: %w", cfg.Bucket, err)
	}
	return obj, nil
}

// Stream creates or updates a stream from cfg (Replicas 0 means the
// store's; an existing stream with fewer replicas is raised), retrying
// while JetStream is slow to answer (see Retry).
func (s *Store) Stream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = s.replicas
	}
	var st jetstream.Stream
	err := s.Retry(ctx, "stream "+cfg.Name, func(ctx context.Context) error {
		var err error
		if st, err = s.js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return err
		}
		return s.EnsureReplicas(ctx, cfg.Name, cfg.Replicas)
	})
	if err != nil {
		return nil, fmt.Errorf("store: stream %s: %w", cfg.Name, err)
	}
	return st, nil
}

// Ready returns nil while the NATS connection is up, else an error saying
// the host is reconnecting (for health checks).
func (s *Store) Ready() error {
	if s.nc == nil || !s.nc.IsConnected() {
		return errors.New("state store: not connected to NATS (reconnecting)")
	}
	return nil
}

// JetStream returns the JetStream handle, for streams (plan work queues) that
// are not key-value buckets.
func (s *Store) JetStream() jetstream.JetStream { return s.js }

// Close drains the connection (in-flight requests finish) and, in embedded
// mode, shuts the server down and waits for it. It is idempotent; later calls
// return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.external { // the caller's connection: only what the store subscribed ends
			if s.bootSub != nil {
				s.closeErr = s.bootSub.Unsubscribe()
			}
			return
		}
		if s.nc != nil {
			if err := s.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
				s.closeErr = fmt.Errorf("store: drain: %w", err)
				s.nc.Close()
			}
			select {
			case <-s.closed:
			case <-time.After(10 * time.Second):
				s.nc.Close()
			}
		}
		s.shutdownServer()
	})
	return s.closeErr
}

func (s *Store) shutdownServer() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.unlock()
	}
}

// startEmbedded starts an in-process NATS server with JetStream under
// cfg.DataDir/nats and no network listener.
func startEmbedded(ctx context.Context, cfg Config) (_ *server.Server, unlock func(), err error) {
	dir := filepath.Join(cfg.DataDir, "nats")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("store: data dir: %w", err)
	}
	if unlock, err = lockDir(dir); err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	srv, err := server.NewServer(&server.Options{
		ServerName: "skillhost",
		DontListen: true, // in-process connections only
		JetStream:  true,
		StoreDir:   dir,
		// SyncAlways fsyncs every JetStream write before the publish is
		// acknowledged. The default fsyncs in the background every two
		// minutes: a write acknowledged in between sits only in the OS page
		// cache, and an OS crash or power loss drops it although the client
		// was told it was stored. skillhost promises an acknowledged session
		// or context value survives, so it pays one fsync per write.
		SyncAlways: true,
		MaxPayload: int32(cfg.maxRecord() + headerRoom),
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: embedded nats: %w", err)
	}
	if cfg.Logger.Enabled(ctx, slog.LevelWarn) {
		srv.SetLogger(serverLogger{cfg.Logger}, cfg.Logger.Enabled(ctx, slog.LevelDebug), false)
	}
	srv.Start()
	wait := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, nil, fmt.Errorf("store: embedded nats not ready after %v", wait)
	}
	return srv, unlock, nil
}

// serverLogger adapts slog to nats-server's logger. Notices are debug-level:
// the embedded server is an implementation detail, not a service of its own.
type serverLogger struct{ l *slog.Logger }

func (l serverLogger) Noticef(f string, v ...any) { l.l.Debug("nats-server: " + fmt.Sprintf(f, v...)) }
func (l serverLogger) Warnf(f string, v ...any)   { l.l.Warn("nats-server: " + fmt.Sprintf(f, v...)) }
func (l serverLogger) Fatalf(f string, v ...any)  { l.l.Error("nats-server: " + fmt.Sprintf(f, v...)) }
func (l serverLogger) Errorf(f string, v ...any)  { l.l.Error("nats-server: " + fmt.Sprintf(f, v...)) }
func (l serverLogger) Debugf(f string, v ...any)  { l.l.Debug("nats-server: " + fmt.Sprintf(f, v...)) }
func (l serverLogger) Tracef(f string, v ...any)  { l.l.Debug("nats-server: " + fmt.Sprintf(f, v...)) }
