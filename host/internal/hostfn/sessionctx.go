package hostfn

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Caps of the context host functions (the store caps the value itself).
const (
	MaxContextRequest = 1<<20 + 4<<10 // bytes of one request block: a 1 MiB value plus key and framing
	MaxContextTTL     = 30 * 24 * time.Hour
)

type contextGetRequest struct {
	Key string `json:"key"`
}

type contextSetRequest struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	TTLMs int64           `json:"ttl_ms"`
}

type contextEntry struct {
	Found     bool            `json:"found"`
	Value     json.RawMessage `json:"value,omitempty"`
	SetAt     *time.Time      `json:"set_at,omitempty"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty"`
}

func entryResult(e store.ContextEntry) contextEntry {
	setAt := e.SetAt
	return contextEntry{Found: true, Value: e.Value, SetAt: &setAt, ExpiresAt: e.ExpiresAt}
}

// contextGet reads key from the calling session's context. A missing or
// expired key is {"found":false}, not an error.
func (f *funcs) contextGet(ctx context.Context, call *Call, req []byte) (any, *guestError) {
	var r contextGetRequest
	if gerr := decodeRequest(req, &r); gerr != nil {
		return nil, gerr
	}
	if gerr := f.contextReady(ctx, call); gerr != nil {
		return nil, gerr
	}
	e, err := f.deps.Context.GetContext(ctx, call.sessionID(ctx), r.Key)
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) && (fe.Reason == fault.ReasonContextNotFound || fe.Reason == fault.ReasonContextExpired) {
			return contextEntry{Found: false}, nil
		}
		return nil, f.storeError(ctx, call, err)
	}
	return entryResult(e), nil
}

// contextSet writes key in the calling session's context; ttl_ms > 0 expires
// the value after that many milliseconds.
func (f *funcs) contextSet(ctx context.Context, call *Call, req []byte) (any, *guestError) {
	var r contextSetRequest
	if gerr := decodeRequest(req, &r); gerr != nil {
		return nil, gerr
	}
	switch {
	case len(r.Value) == 0:
		return nil, errorf(fault.GuestBadRequest, "value is required")
	case r.TTLMs < 0 || r.TTLMs > MaxContextTTL.Milliseconds():
		return nil, errorf(fault.GuestBadRequest, "ttl_ms %d: must be 0 (no expiry) up to %d", r.TTLMs, MaxContextTTL.Milliseconds())
	}
	if gerr := f.contextReady(ctx, call); gerr != nil {
		return nil, gerr
	}
	e, err := f.deps.Context.SetContext(ctx, call.sessionID(ctx), r.Key, r.Value, time.Duration(r.TTLMs)*time.Millisecond)
	if err != nil {
		return nil, f.storeError(ctx, call, err)
	}
	res := entryResult(e)
	res.Value = nil // the guest has it
	return res, nil
}

func (f *funcs) contextReady(ctx context.Context, call *Call) *guestError {
	if f.deps.Context != nil {
		if gerr := f.resolveSession(ctx, call); gerr != nil {
			return gerr
		}
	}
	switch {
	case f.deps.Context == nil:
		return errorf(fault.GuestUnavailable, "this host has no session context store")
	case call.sessionID(ctx) == "":
		return errorf(fault.GuestNoSession, "no session: the call was made without a session_id")
	}
	return nil
}

// resolveSession gives a call made without a session_id (an A2A task's) its
// context's session, opened on first use.
func (f *funcs) resolveSession(ctx context.Context, call *Call) *guestError {
	if call.Session == nil || call.sessionID(ctx) != "" {
		return nil
	}
	id, err := call.Session.OpenSession(ctx)
	if err != nil {
		return f.storeError(ctx, call, err)
	}
	call.mu.Lock()
	call.opened = id
	call.mu.Unlock()
	return nil
}

// storeError maps a store failure to a guest error. Details of internal
// failures stay in the host log.
func (f *funcs) storeError(ctx context.Context, call *Call, err error) *guestError {
	fe := fault.From(err)
	switch {
	case fe.Kind == fault.SessionNotFound:
		return errorf(fault.GuestSessionNotFound, "%s", fe.Message())
	case fe.Reason == fault.ReasonValueTooLarge:
		return errorf(fault.GuestValueTooLarge, "%s", fe.Message())
	case fe.Kind == fault.InvalidParams:
		return errorf(fault.GuestBadRequest, "%s", fe.Message())
	case fe.Kind == fault.Timeout || fe.Kind == fault.Canceled:
		return errorf(fault.GuestTimeout, "the call ended while waiting for the store")
	}
	f.deps.Logger.WarnContext(ctx, "hostfn: context store failed", f.attrs(ctx, call, "err", err)...)
	return errorf(fault.GuestStoreError, "the session context store failed")
}
