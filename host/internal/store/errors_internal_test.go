package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
)

// A store that does not answer is store_unavailable (retryable), never a
// skill timeout or a bare internal error; a caller that gave up stays
// canceled.
func TestStoreErrClassifiesUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"no responders (stream leader moving)", nats.ErrNoResponders, fault.ReasonStoreUnavailable},
		{"request out of time", fmt.Errorf("get: %w", context.DeadlineExceeded), fault.ReasonStoreUnavailable},
		{"reconnecting", nats.ErrConnectionReconnecting, fault.ReasonStoreUnavailable},
		{"cluster unavailable", &jetstream.APIError{ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, fault.ReasonStoreUnavailable},
		{"caller canceled", context.Canceled, fault.ReasonCanceled},
		{"bucket full", &jetstream.APIError{ErrorCode: 10077, Description: "maximum bytes exceeded"}, fault.ReasonStorageFull},
		{"something else", fmt.Errorf("boom"), fault.ReasonInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := storeErr(tc.err, "s1", "op")
			if diff := cmp.Diff(tc.want, got.Reason); diff != "" {
				t.Errorf("storeErr(%v) reason (-want +got):\n%s", tc.err, diff)
			}
			if got.Data["session_id"] != "s1" {
				t.Errorf("session_id = %v", got.Data["session_id"])
			}
		})
	}
}
