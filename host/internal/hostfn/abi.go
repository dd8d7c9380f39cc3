package hostfn

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	extism "github.com/extism/go-sdk"

	"github.com/skillhost/skillhost/host/fault"
)

// guestError is the error half of a reply; its Code is one of host/fault's
// guest ABI codes (fault.Guest*, docs/HOST_FUNCTIONS.md) or, for a failed
// agent_call, the failure's reason.
type guestError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"` // details (agent_call failures)
}

func (e *guestError) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *guestError {
	return &guestError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// reply is the envelope every host function answers with.
type reply struct {
	OK     bool        `json:"ok"`
	Result any         `json:"result,omitempty"`
	Error  *guestError `json:"error,omitempty"`
}

// memory is the part of the Extism kernel the ABI uses. extismMemory adapts
// *extism.CurrentPlugin; every method takes ctx so cancellation reaches the
// kernel calls.
type memory interface {
	length(ctx context.Context, offset uint64) (uint64, error)
	read(offset, n uint32) ([]byte, bool)
	alloc(ctx context.Context, n uint64) (uint64, error)
	write(offset uint32, b []byte) bool
}

type extismMemory struct{ p *extism.CurrentPlugin }

func (m extismMemory) length(ctx context.Context, off uint64) (uint64, error) {
	return m.p.LengthWithContext(ctx, off)
}
func (m extismMemory) read(off, n uint32) ([]byte, bool) { return m.p.Memory().Read(off, n) }
func (m extismMemory) alloc(ctx context.Context, n uint64) (uint64, error) {
	return m.p.AllocWithContext(ctx, n)
}
func (m extismMemory) write(off uint32, b []byte) bool { return m.p.Memory().Write(off, b) }

// readRequest copies the guest block at offset, refusing anything that is not
// a live Extism block inside memory or that is larger than limit.
func readRequest(ctx context.Context, m memory, offset uint64, limit int) ([]byte, *guestError) {
	if offset == 0 || offset > math.MaxUint32 {
		return nil, errorf(fault.GuestBadPointer, "offset %#x is not a memory block", offset)
	}
	n, err := m.length(ctx, offset)
	if err != nil {
		return nil, errorf(fault.GuestBadPointer, "offset %#x: %v", offset, err)
	}
	if n == 0 {
		return nil, errorf(fault.GuestBadPointer, "offset %#x is not an allocated memory block", offset)
	}
	if n > uint64(limit) {
		return nil, errorf(fault.GuestRequestTooLarge, "request is %d bytes, the limit is %d", n, limit)
	}
	if offset+n > math.MaxUint32 {
		return nil, errorf(fault.GuestBadPointer, "block %#x+%d is outside memory", offset, n)
	}
	b, ok := m.read(uint32(offset), uint32(n))
	if !ok {
		return nil, errorf(fault.GuestBadPointer, "block %#x+%d is outside memory", offset, n)
	}
	return append([]byte(nil), b...), nil
}

// writeReply encodes r into a fresh guest block and returns its offset, or 0
// when the guest memory cannot take it (the SDK reports a missing reply).
func writeReply(ctx context.Context, m memory, r reply) (uint64, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return 0, fmt.Errorf("encode reply: %w", err)
	}
	off, err := m.alloc(ctx, uint64(len(b)))
	if err != nil {
		return 0, fmt.Errorf("alloc %d bytes: %w", len(b), err)
	}
	if off == 0 || off > math.MaxUint32 || !m.write(uint32(off), b) {
		return 0, fmt.Errorf("write %d bytes at %#x: out of memory bounds", len(b), off)
	}
	return off, nil
}

// decodeRequest decodes a JSON request. Unknown fields are ignored so a newer
// SDK keeps working on an older host; every known field is validated by the
// function itself.
func decodeRequest(b []byte, v any) *guestError {
	if err := json.Unmarshal(b, v); err != nil {
		return errorf(fault.GuestBadRequest, "request is not the expected JSON: %v", err)
	}
	return nil
}
