package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
)

// ContextEntry is one context value of a session.
type ContextEntry struct {
	Key       string          `json:"context_key"`
	Value     json.RawMessage `json:"value"`
	SetAt     time.Time       `json:"set_at"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty"` // nil: never expires
}

// record is the stored form of a context value (the key is in the KV key).
type record struct {
	Value     json.RawMessage `json:"value"`
	SetAt     time.Time       `json:"set_at"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty"`
}

// expired reports whether r has expired at now.
func (r record) expired(now time.Time) bool {
	return r.ExpiresAt != nil && !now.Before(*r.ExpiresAt)
}

// SetContext stores value under key in an active session, replacing any
// previous value. ttl 0 means no expiry; otherwise the value is gone once
// ttl has passed. value must be JSON of at most MaxValueBytes; ttl at most
// MaxContextTTL. A set that would leave the session holding more than
// MaxKeysPerSession values or MaxSessionBytes bytes (key plus compacted
// value, summed) is ResourceExhausted (session_quota) and changes nothing.
func (s *Store) SetContext(ctx context.Context, sessionID, key string, value json.RawMessage, ttl time.Duration) (ContextEntry, error) {
	if f := checkSessionID(sessionID); f != nil {
		return ContextEntry{}, f
	}
	if f := checkContextKey(sessionID, key); f != nil {
		return ContextEntry{}, f
	}
	switch {
	case len(value) > s.maxValue:
		return ContextEntry{}, s.tooLarge(sessionID, "value", len(value))
	case ttl < 0 || ttl > s.cfg.MaxContextTTL:
		return ContextEntry{}, invalid(sessionID, "ttl", fmt.Sprintf("must be 0 (no expiry) up to %v", s.cfg.MaxContextTTL))
	}
	value, ok := compactJSON(value)
	if !ok {
		return ContextEntry{}, invalid(sessionID, "value", "must be valid JSON")
	}
	if err := s.requireActive(ctx, sessionID); err != nil {
		return ContextEntry{}, err
	}
	k := contextKey(sessionID, key)
	var set ContextEntry
	for attempt := 0; ; attempt++ {
		if attempt == quotaRetries {
			return ContextEntry{}, busyErr(sessionID)
		}
		// The key's last sequence is read before the ledger commit: a write
		// conditional on it cannot land after a later set's commit (see
		// quota.go).
		seq, err := s.lastSeq(ctx, k)
		if err != nil {
			return ContextEntry{}, storeErr(err, sessionID, "set context")
		}
		now := time.Now().UTC()
		rec := record{Value: value, SetAt: now}
		var expires int64
		if ttl > 0 {
			exp := now.Add(ttl)
			rec.ExpiresAt = &exp
			expires = exp.Add(expiryGrace).Truncate(time.Second).Unix() + 1
		}
		data, err := marshal(rec)
		if err != nil {
			return ContextEntry{}, invalid(sessionID, "value", "must be valid JSON")
		}
		r, err := s.reserve(ctx, sessionID, key, int64(len(key)+len(value)), expires)
		if err != nil {
			return ContextEntry{}, storeErr(err, sessionID, "set context")
		}
		err = s.put(ctx, k, data, ttl, seq)
		if isWrongLastSeq(err) {
			continue // another set of this key landed first: account again
		}
		if err != nil {
			return ContextEntry{}, storeErr(err, sessionID, "set context")
		}
		s.settle(ctx, sessionID, r)
		set = ContextEntry{Key: key, Value: rec.Value, SetAt: now, ExpiresAt: rec.ExpiresAt}
		break
	}
	// A close that raced with this write may have purged before it landed:
	// re-check so a closed session's data never lingers.
	if err := s.requireActive(ctx, sessionID); err != nil {
		if perr := s.purgeContext(ctx, sessionID); perr != nil {
			s.log.Warn("store: closed session's context not purged", "session_id", sessionID, "err", perr)
		}
		return ContextEntry{}, err
	}
	return set, nil
}

// lastSeq is the stream sequence of the last message under a context key,
// delete and expiry markers included; 0 when there is none.
func (s *Store) lastSeq(ctx context.Context, key string) (uint64, error) {
	msg, err := s.valuesStream.GetLastMsgForSubject(ctx, "$KV."+ContextBucket+"."+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return msg.Sequence, nil
}

// put writes one context record if the key's last sequence is still seq
// (0: no message). With ttl > 0 and server support, the message carries a
// per-message TTL (whole seconds, rounded up) so the server removes it from
// disk; the record's expires_at is authoritative.
func (s *Store) put(ctx context.Context, key string, data []byte, ttl time.Duration, seq uint64) error {
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(seq)}
	if ttl > 0 && s.keyTTL {
		serverTTL := ttl.Truncate(time.Second)
		if serverTTL < ttl {
			serverTTL += time.Second
		}
		opts = append(opts, jetstream.WithMsgTTL(serverTTL))
	}
	_, err := s.js.Publish(ctx, "$KV."+ContextBucket+"."+key, data, opts...)
	return err
}

// GetContext returns the value under key in an active session. A key never
// set, deleted or purged is InvalidParams (context_not_found); a value past
// its ttl is InvalidParams (context_expired) and is deleted.
func (s *Store) GetContext(ctx context.Context, sessionID, key string) (ContextEntry, error) {
	if f := checkSessionID(sessionID); f != nil {
		return ContextEntry{}, f
	}
	if f := checkContextKey(sessionID, key); f != nil {
		return ContextEntry{}, f
	}
	if err := s.requireActive(ctx, sessionID); err != nil {
		return ContextEntry{}, err
	}
	k := contextKey(sessionID, key)
	e, err := s.values.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ContextEntry{}, withSession(fault.New(fault.InvalidParams, fault.ReasonContextNotFound,
			"no context value under this key").With("context_key", key), sessionID)
	}
	if err != nil {
		return ContextEntry{}, storeErr(err, sessionID, "get context")
	}
	var rec record
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return ContextEntry{}, storeErr(fmt.Errorf("decode context record: %w", err), sessionID, "get context")
	}
	if rec.expired(time.Now()) {
		// Lazy delete, only if nobody has written a newer value meanwhile.
		if err := s.values.Delete(ctx, k, jetstream.LastRevision(e.Revision())); err != nil &&
			!errors.Is(err, jetstream.ErrKeyExists) {
			s.log.Debug("store: lazy delete of expired context failed", "session_id", sessionID, "err", err)
		}
		return ContextEntry{}, withSession(fault.Newf(fault.InvalidParams, fault.ReasonContextExpired,
			"context value expired at %s", rec.ExpiresAt.Format(time.RFC3339)).With("context_key", key), sessionID)
	}
	return ContextEntry{Key: key, Value: rec.Value, SetAt: rec.SetAt, ExpiresAt: rec.ExpiresAt}, nil
}
