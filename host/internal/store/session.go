package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
)

// Session statuses.
const (
	StatusActive = "active"
	StatusClosed = "closed"
)

// Session is a conversation with an agent. A closed session's id cannot be
// reused while its record is retained (Config.ClosedSessionRetention).
type Session struct {
	ID        string          `json:"session_id"`
	AgentID   string          `json:"agent_id,omitempty"`
	Context   json.RawMessage `json:"context,omitempty"` // initial context given at creation
	Status    string          `json:"status"`
	CreatedAt time.Time       `json:"created_at"`
	ClosedAt  *time.Time      `json:"closed_at,omitempty"`
	// Owner is the principal that created the session (auth.Principal's
	// Owner); "" for sessions created before owners existed.
	Owner string `json:"owner,omitempty"`
	// TokenSHA256 is the hex SHA-256 of the session token issued at
	// creation ("" when none was); kept after close, so the token of a
	// closed session is recognised as revoked.
	TokenSHA256 string `json:"token_sha256,omitempty"`
}

// closeRetries bounds the read-modify-write loop of CloseSession.
const closeRetries = 5

// NewSessionID returns a fresh random session id: "sess_" and 128 random
// bits in hex.
func NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "sess_" + hex.EncodeToString(b[:])
}

// CreateSession stores a new active session. An empty in.ID gets a generated
// one; Status, CreatedAt and ClosedAt of in are ignored. An id already in use
// — active, or closed less than Config.ClosedSessionRetention ago — is
// InvalidState (session_exists or session_closed). Once a closed session's
// record has expired its id is free and a new session may take it.
func (s *Store) CreateSession(ctx context.Context, in Session) (Session, error) {
	if in.ID == "" {
		in.ID = NewSessionID()
	} else if f := checkSessionID(in.ID); f != nil {
		return Session{}, f
	}
	if len(in.AgentID) > MaxAgentIDBytes || !utf8.ValidString(in.AgentID) {
		return Session{}, invalid(in.ID, "agent_id", "must be at most 256 bytes of UTF-8")
	}
	if len(in.Context) > 0 {
		if len(in.Context) > s.maxValue {
			return Session{}, s.tooLarge(in.ID, "context", len(in.Context))
		}
		c, ok := compactJSON(in.Context)
		if !ok {
			return Session{}, invalid(in.ID, "context", "must be valid JSON")
		}
		in.Context = c
	}
	sess := Session{
		ID: in.ID, AgentID: in.AgentID, Context: in.Context, Owner: in.Owner, TokenSHA256: in.TokenSHA256,
		Status: StatusActive, CreatedAt: time.Now().UTC(),
	}
	rec, err := marshal(sess)
	if err != nil {
		return Session{}, invalid(in.ID, "context", "must be valid JSON")
	}
	_, err = s.sessions.Create(ctx, sessionKey(sess.ID), rec)
	if errors.Is(err, jetstream.ErrKeyExists) {
		old, _, gerr := s.getSession(ctx, sess.ID)
		if gerr == nil && old.Status == StatusClosed {
			return Session{}, withSession(fault.New(fault.InvalidState, fault.ReasonSessionClosed,
				"session id belongs to a closed session and cannot be reused"), sess.ID)
		}
		return Session{}, withSession(fault.New(fault.InvalidState, fault.ReasonSessionExists,
			"a session with this id already exists"), sess.ID)
	}
	if err != nil {
		return Session{}, storeErr(err, sess.ID, "create session")
	}
	return sess, nil
}

// Session returns the session with id, whatever its status. A missing
// session is SessionNotFound (session_not_found).
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	if f := checkSessionID(id); f != nil {
		return Session{}, f
	}
	sess, _, err := s.getSession(ctx, id)
	return sess, err
}

// ActiveSession returns the session with id if it is active. A missing
// session is SessionNotFound (session_not_found), a closed one
// SessionNotFound (session_closed).
func (s *Store) ActiveSession(ctx context.Context, id string) (Session, error) {
	sess, err := s.Session(ctx, id)
	if err != nil {
		return Session{}, err
	}
	if sess.Status != StatusActive {
		return Session{}, closedErr(id)
	}
	return sess, nil
}

// CloseSession marks an active session closed and deletes its context
// values. Of concurrent closes exactly one succeeds; the others, and any
// close of an already closed session, get SessionNotFound (session_closed).
// Once it returns, no host accepts a call for the session: on a cluster it
// waits out the other hosts' session cache leases (Config.SessionLease).
func (s *Store) CloseSession(ctx context.Context, id string) (Session, error) {
	if f := checkSessionID(id); f != nil {
		return Session{}, f
	}
	for range closeRetries {
		sess, rev, err := s.getSession(ctx, id)
		if err != nil {
			return Session{}, err
		}
		if sess.Status != StatusActive {
			return Session{}, closedErr(id)
		}
		now := time.Now().UTC()
		sess.Status, sess.ClosedAt = StatusClosed, &now
		// The retained record is small: the initial context is dropped.
		tomb := sess
		tomb.Context = nil
		rec, err := marshal(tomb)
		if err != nil {
			return Session{}, storeErr(err, id, "close session")
		}
		err = s.putClosed(ctx, id, rec, rev)
		if isWrongLastSeq(err) {
			continue // changed under us: re-read; a concurrent close wins
		}
		if err != nil {
			return Session{}, storeErr(err, id, "close session")
		}
		acked := time.Now()
		s.cache.evict(id)
		if err := s.purgeContext(ctx, id); err != nil {
			// The session is closed, so its values are unreachable; they
			// are only left on disk. Report it, do not undo the close.
			s.log.Warn("store: closed session's context not purged", "session_id", id, "err", err)
		}
		if sess.Owner != "" {
			s.releaseOpen(ctx, sess.Owner, id)
		}
		s.cache.waitOutLeases(ctx, acked)
		return sess, nil
	}
	return Session{}, withSession(fault.New(fault.Internal, fault.ReasonInternal,
		"session changed concurrently too often; retry"), id)
}

// putClosed replaces a session record at revision rev with its closed form,
// which the server removes after ClosedSessionRetention (when it supports
// per-message TTL).
func (s *Store) putClosed(ctx context.Context, id string, rec []byte, rev uint64) error {
	if !s.keyTTL {
		_, err := s.sessions.Update(ctx, sessionKey(id), rec, rev)
		return err
	}
	_, err := s.js.Publish(ctx, "$KV."+SessionsBucket+"."+sessionKey(id), rec,
		jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(s.cfg.ClosedSessionRetention))
	return err
}

// purgeContext removes every context value of a session, and its usage
// ledger, in one stream purge.
func (s *Store) purgeContext(ctx context.Context, id string) error {
	subject := "$KV." + ContextBucket + "." + contextPrefix(id) + ">"
	if err := s.valuesStream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("purge %s: %w", subject, err)
	}
	return nil
}

// getSession reads a session and its revision.
func (s *Store) getSession(ctx context.Context, id string) (Session, uint64, error) {
	e, err := s.sessions.Get(ctx, sessionKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Session{}, 0, withSession(fault.New(fault.SessionNotFound, fault.ReasonSessionNotFound,
			"no session with this id"), id)
	}
	if err != nil {
		return Session{}, 0, storeErr(err, id, "read session")
	}
	var sess Session
	if err := json.Unmarshal(e.Value(), &sess); err != nil {
		return Session{}, 0, storeErr(fmt.Errorf("decode session record: %w", err), id, "read session")
	}
	return sess, e.Revision(), nil
}

func closedErr(id string) *fault.Error {
	return withSession(fault.New(fault.SessionNotFound, fault.ReasonSessionClosed, "the session is closed"), id)
}

func (s *Store) tooLarge(id, field string, n int) *fault.Error {
	return withSession(fault.Newf(fault.InvalidParams, fault.ReasonValueTooLarge,
		"%s: %d bytes is over the %d-byte limit (%s)", field, n, s.maxValue, s.valueLimit).
		With("field", field).With("limit_bytes", s.maxValue), id)
}
