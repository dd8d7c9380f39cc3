package store

import (
	"context"
	"errors"

	"github.com/skillhost/skillhost/host/fault"
)

// Sessions belong to the principal that created them (Session.Owner). A
// session owned by someone else is reported exactly like a missing one, so
// a caller never learns whether another principal's session exists.
//
// Each owner with a cap on open sessions has an index record in the
// sessions bucket under "owners.<base64url(owner)>" (session keys never
// contain '.', so it cannot collide with one) listing its open sessions.
// Creation adds to it with a revision-checked update, closing removes from
// it; an id left behind by a crash between the two writes is dropped the
// next time the owner is at its cap (each listed session is re-read).

// ownerIndex is an owner's open sessions.
type ownerIndex struct {
	Open []string `json:"open"`
}

func ownerKey(owner string) string { return "owners." + enc.EncodeToString([]byte(owner)) }

// NotFound is the error for a session that does not exist (or is not the
// caller's: the two are indistinguishable).
func NotFound(id string) *fault.Error {
	return withSession(fault.New(fault.SessionNotFound, fault.ReasonSessionNotFound, "no session with this id"), id)
}

// OwnedSession returns the session with id if owns accepts its owner and it
// is active, without its initial context (possibly from the session
// cache). Another owner's session is NotFound, whatever its status; the
// caller's closed session is SessionNotFound (session_closed).
func (s *Store) OwnedSession(ctx context.Context, id string, owns func(owner string) bool) (Session, error) {
	sess, err := s.CachedSession(ctx, id)
	if err != nil {
		return Session{}, err
	}
	if !owns(sess.Owner) {
		return Session{}, NotFound(id)
	}
	if sess.Status != StatusActive {
		return Session{}, closedErr(id)
	}
	return sess, nil
}

// CloseOwnedSession closes the session with id if owns accepts its owner
// (else NotFound), as CloseSession does.
func (s *Store) CloseOwnedSession(ctx context.Context, id string, owns func(owner string) bool) (Session, error) {
	sess, err := s.Session(ctx, id)
	if err != nil {
		return Session{}, err
	}
	if !owns(sess.Owner) {
		return Session{}, NotFound(id)
	}
	return s.CloseSession(ctx, id)
}

// CreateOwnedSession stores a new session for in.Owner, refusing it with
// ResourceExhausted (key_quota) when the owner already holds maxOpen open
// sessions (0: no cap, and no index is kept).
func (s *Store) CreateOwnedSession(ctx context.Context, in Session, maxOpen int) (Session, error) {
	if in.ID == "" {
		in.ID = NewSessionID()
	}
	if maxOpen <= 0 || in.Owner == "" {
		return s.CreateSession(ctx, in)
	}
	if f := checkSessionID(in.ID); f != nil {
		return Session{}, f
	}
	if err := s.reserveOpen(ctx, in.Owner, in.ID, maxOpen); err != nil {
		return Session{}, err
	}
	sess, err := s.CreateSession(ctx, in)
	if err != nil {
		s.releaseOpen(ctx, in.Owner, in.ID)
		return Session{}, err
	}
	return sess, nil
}

// OwnerSessions lists the open sessions of owner as its index records them
// (empty when the owner has no cap and so no index).
func (s *Store) OwnerSessions(ctx context.Context, owner string) ([]string, error) {
	idx, err := s.readOwner(ctx, owner)
	if err != nil {
		return nil, storeErr(err, "", "read owner index")
	}
	return idx.Open, nil
}

func (s *Store) readOwner(ctx context.Context, owner string) (ownerIndex, error) {
	e, err := s.owners.Get(ctx, ownerKey(owner))
	if errors.Is(err, ErrNotFound) {
		return ownerIndex{}, nil
	}
	if err != nil {
		return ownerIndex{}, err
	}
	return *e.Value, nil
}

// reserveOpen adds id to owner's open sessions unless it holds max already
// (after dropping ids whose session is gone, closed or not the owner's).
func (s *Store) reserveOpen(ctx context.Context, owner, id string, max int) error {
	_, err := s.owners.Change(ctx, ownerKey(owner), Change[ownerIndex]{Upsert: true, Apply: func(idx *ownerIndex) error {
		if len(idx.Open) >= max {
			idx.Open = s.stillOpen(ctx, owner, idx.Open)
		}
		if len(idx.Open) >= max {
			return fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
				"this key already holds %d open sessions; close one first", len(idx.Open)).
				With("limit", "auth.limits.max_open_sessions").With("limit_value", max)
		}
		idx.Open = append(idx.Open, id)
		return nil
	}})
	if errors.Is(err, errBusy) {
		return busyErr(id)
	}
	if err != nil {
		return storeErr(err, id, "write owner index")
	}
	return nil
}

// stillOpen keeps the ids whose session exists, is active and is owner's.
func (s *Store) stillOpen(ctx context.Context, owner string, ids []string) []string {
	out := ids[:0:0]
	for _, id := range ids {
		sess, _, err := s.getSession(ctx, id)
		var fe *fault.Error
		if err != nil && !(errors.As(err, &fe) && fe.Kind == fault.SessionNotFound) {
			out = append(out, id) // cannot tell: keep counting it
			continue
		}
		if err == nil && sess.Status == StatusActive && sess.Owner == owner {
			out = append(out, id)
		}
	}
	return out
}

// releaseOpen removes id from owner's open sessions. A failure leaves the
// id listed until the owner next reaches its cap; it is only logged.
func (s *Store) releaseOpen(ctx context.Context, owner, id string) {
	_, err := s.owners.Change(ctx, ownerKey(owner), Change[ownerIndex]{Apply: func(idx *ownerIndex) error {
		kept := idx.Open[:0:0]
		for _, o := range idx.Open {
			if o != id {
				kept = append(kept, o)
			}
		}
		if len(kept) == len(idx.Open) {
			return ErrUnchanged
		}
		idx.Open = kept
		return nil
	}})
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.log.Debug("store: owner index not updated", "session_id", id, "err", err)
	}
}
