package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Start-up against a cluster: JetStream may not answer yet (servers still
// starting, a meta leader still being elected), so Open retries the
// initialisation with capped exponential backoff until Config.StartTimeout.
const (
	attemptTimeout = 5 * time.Second
	firstRetry     = 250 * time.Millisecond
	maxRetry       = 5 * time.Second
	// headerRoom is left under the server's max_payload for the headers a
	// write carries (expected sequence, TTL, KV operation).
	headerRoom = 4 << 10
	// minValueBytes is the smallest value limit the store accepts after
	// fitting it under the server's max_payload.
	minValueBytes = 4 << 10
	// jsErrNotClustered is JetStream's "replicas > 1 not supported in
	// non-clustered mode".
	jsErrNotClustered = 10074
)

// permanentError is a start-up failure that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// waitReady runs init until it succeeds. The embedded server is ready once
// it accepts connections, so it gets one attempt; a cluster gets retries
// until StartTimeout (or ctx) ends, each failure logged.
func (s *Store) waitReady(ctx context.Context) error {
	if s.srv != nil {
		return s.init(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	start, delay := time.Now(), firstRetry
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		err := s.init(actx)
		acancel()
		if err == nil {
			if attempt > 1 {
				s.log.Info("store: JetStream ready", "attempts", attempt, "waited", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("store: JetStream not ready after %v (%d attempts; store.start_timeout): %w",
				time.Since(start).Round(time.Second), attempt, err)
		}
		s.log.Warn("store: JetStream not ready yet; retrying", "attempt", attempt, "retry_in", delay, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetry)
	}
}

// startAttempt bounds one try of Retry: creating a replicated stream on a
// loaded cluster can take longer than nats.go's 5s default.
const startAttempt = 5 * time.Second

// Retry runs f until it succeeds, retrying while JetStream does not answer
// (see Unavailable; an attempt running out of time counts) with capped
// backoff, at most Config.StartTimeout in all. It is for start-up work —
// creating buckets and streams — that a cluster under load or electing a
// leader may not answer at once; each retry is logged.
func (s *Store) Retry(ctx context.Context, what string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	delay := firstRetry
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, startAttempt)
		err := f(actx)
		timedOut := actx.Err() != nil && ctx.Err() == nil
		acancel()
		// A stream another host is creating right now may be "not found" for
		// a moment after our create said it exists.
		retry := Unavailable(err) || timedOut || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrStreamNotFound)
		if err == nil || !retry || ctx.Err() != nil {
			return err
		}
		s.log.Warn("store: JetStream slow to answer; retrying", "what", what, "attempt", attempt, "retry_in", delay, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetry)
	}
}

// resolveReplicas sets the replication factor of the store's buckets:
// Config.Replicas when given, else 1 for the embedded or a single server and
// ClusterReplicas on a cluster (or the number of servers it reports, when
// fewer).
func (s *Store) resolveReplicas() {
	switch {
	case s.srv != nil:
		s.replicas = 1
	case s.cfg.Replicas > 0:
		s.replicas = s.cfg.Replicas
	case s.nc.ConnectedClusterName() == "":
		s.replicas = 1
		s.log.Warn("store: the NATS server is not clustered: every record has one copy, and losing that server's disk loses them")
	default:
		n := len(s.nc.Servers())
		s.replicas = max(1, min(ClusterReplicas, n))
		if s.replicas < ClusterReplicas {
			s.log.Warn("store: the NATS cluster reports fewer servers than the default replication; buckets get one replica per server",
				"servers", n, "replicas", s.replicas)
		}
	}
}

// fitPayload caps the records the store writes at the server's max_payload
// (read from the connection). A value limit above what fits is lowered, and
// said so once; a ledger that cannot fit is a configuration error.
func (s *Store) fitPayload() error {
	s.maxPayload = s.nc.MaxPayload()
	fit := int(s.MaxRecordBytes()) - recordOverhead
	s.maxValue, s.valueLimit = int(s.cfg.MaxValue), "store.max_value"
	if int(s.cfg.MaxValue) > fit {
		if fit < minValueBytes {
			return &permanentError{fmt.Errorf("store: the NATS server's max_payload (%d bytes) leaves no room for context values; raise it to at least %d",
				s.maxPayload, minValueBytes+recordOverhead+headerRoom)}
		}
		s.maxValue = fit
		s.valueLimit = fmt.Sprintf("store.max_value, lowered to fit the NATS server's max_payload of %d bytes", s.maxPayload)
		s.log.Info("store: context values capped below the NATS server's max_payload", "store.max_value", int(s.cfg.MaxValue),
			"max_payload", s.maxPayload, "effective_bytes", s.maxValue)
	}
	if ledger := s.cfg.MaxKeysPerSession*ledgerEntryMaxBytes + recordOverhead; int64(ledger) > s.MaxRecordBytes() {
		return &permanentError{fmt.Errorf("store: store.max_keys_per_session %d needs %d-byte records; the NATS server's max_payload is %d bytes",
			s.cfg.MaxKeysPerSession, ledger, s.maxPayload)}
	}
	return nil
}

// MaxRecordBytes is the largest record (message body) the connected server
// accepts, less room for headers: buckets and streams of other packages cap
// their records at it so a write fails with their own clear error, not a
// NATS one.
func (s *Store) MaxRecordBytes() int64 { return s.maxPayload - headerRoom }

// Replicas is the replication factor the store chose (see Config.Replicas).
// Packages that create their own streams use it.
func (s *Store) Replicas() int { return s.replicas }

// EnsureReplicas raises the stream's replication factor to want when it is
// lower (JetStream copies the data to the new replicas while it keeps
// serving) and makes a replicated stream answer reads from its leader only.
// A raise the cluster refuses is logged as an error — the data stays on
// fewer servers than asked — and is not fatal. It never lowers replicas.
func (s *Store) EnsureReplicas(ctx context.Context, stream string, want int) error {
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	cfg := st.CachedInfo().Config
	next := max(cfg.Replicas, want)
	direct := next == 1
	if cfg.Replicas == next && cfg.AllowDirect == direct {
		return nil
	}
	old := cfg.Replicas
	cfg.Replicas, cfg.AllowDirect = next, direct
	if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
		if next > old {
			s.log.Error("store: NOT SAFE: could not raise the replicas of a stream; losing a server that holds it can lose its data",
				"stream", stream, "replicas", old, "want", next, "err", err)
			return nil
		}
		return err
	}
	if next > old {
		s.log.Info("store: raised the replicas of a stream", "stream", stream, "from", old, "to", next)
	}
	return nil
}

// notClustered reports JetStream's refusal of replicas on a single server.
func notClustered(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrNotClustered ||
		err != nil && strings.Contains(err.Error(), "not supported in non-clustered mode")
}
