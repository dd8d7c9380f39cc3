package hostfn

import (
	"context"
	"encoding/json"

	"github.com/skillhost/skillhost/host/fault"
)

// Caps of the progress host function.
const (
	MaxProgressMessage = 1 << 10  // bytes kept of a message; the rest is cut
	MaxProgressData    = 16 << 10 // bytes of the optional data payload
	MaxProgressRequest = 32 << 10 // bytes of one progress request block
	ProgressRate       = 20       // sustained reports per second per plugin
	ProgressBurst      = 40       // reports a plugin may send at once
)

type progressRequest struct {
	Percent *float64        `json:"percent"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

type progressResult struct {
	Delivered bool `json:"delivered"` // false: nobody is listening to this call
}

// reportProgress hands a progress report to Call.Progress. The percent is
// clamped to [0, 100], the message cut to MaxProgressMessage bytes; data over
// MaxProgressData is refused. Call.Progress must not block for long: it runs
// on the plugin's call.
func (f *funcs) reportProgress(_ context.Context, call *Call, req []byte) (any, *guestError) {
	var r progressRequest
	if gerr := decodeRequest(req, &r); gerr != nil {
		return nil, gerr
	}
	if r.Percent == nil {
		return nil, errorf(fault.GuestBadRequest, "percent is required")
	}
	if len(r.Data) > MaxProgressData {
		return nil, errorf(fault.GuestRequestTooLarge, "progress data is %d bytes, the limit is %d", len(r.Data), MaxProgressData)
	}
	if string(r.Data) == "null" {
		r.Data = nil
	}
	if !f.progress.Allow() {
		return nil, errorf(fault.GuestRateLimited, "more than %d progress reports per second", ProgressRate)
	}
	if call.Progress == nil {
		return progressResult{}, nil
	}
	call.Progress.Progress(Progress{
		Percent: min(max(*r.Percent, 0), 100),
		Message: truncate(r.Message, MaxProgressMessage),
		Data:    r.Data,
	})
	return progressResult{Delivered: true}, nil
}
