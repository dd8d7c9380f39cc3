package store

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
)

// storeErr turns an error from NATS into a fault carrying the session id
// (see Fault).
func storeErr(err error, sessionID, op string) *fault.Error {
	return withSession(Fault(err, op), sessionID)
}

// Fault turns an error from NATS into the fault a client sees; it is the
// one place JetStream's refusals are classified. A fault in err's chain is
// returned as it is; a canceled context stays Canceled; a full bucket (see
// Full) is ResourceExhausted with reason storage_full; a record over the
// server's max_payload is InvalidParams (value_too_large); a store that did
// not answer (NATS unavailable, a request out of time) is Internal with
// reason store_unavailable (retryable); anything else is Internal. op says
// what failed ("create task").
func Fault(err error, op string) *fault.Error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	switch {
	case Full(err):
		return fault.Wrap(fault.ResourceExhausted, fault.ReasonStorageFull, err, op+": state storage is full")
	case errors.Is(err, nats.ErrMaxPayload):
		return fault.Wrap(fault.InvalidParams, fault.ReasonValueTooLarge, err, op+": record larger than the NATS max_payload")
	case Unavailable(err), errors.Is(err, context.DeadlineExceeded):
		// A store request that ran out of time (nats.go's 5 s API timeout,
		// or the caller's deadline) is the store not answering, not a skill
		// timeout: typically a stream leader moving to another node.
		return fault.Wrap(fault.Internal, fault.ReasonStoreUnavailable, err,
			op+": the state store did not answer (NATS failing over?); retry")
	}
	f := fault.From(err)
	if f.Kind == fault.Internal {
		f = fault.Wrap(fault.Internal, fault.ReasonInternal, err, op+": "+err.Error())
	}
	return f
}

// JetStream error codes that mean a write found no room.
const (
	jsErrStoreFailed          = 10077 // "maximum bytes exceeded", "maximum messages exceeded"
	jsErrInsufficientResource = 10023 // the server's JetStream storage is used up
	jsErrStorageExceeded      = 10047 // insufficient storage resources available
)

// Full reports whether err is JetStream refusing a write for lack of room:
// the stream (bucket) at its MaxBytes or MaxMsgs with DiscardNew, or the
// server's JetStream storage used up. The write did not land.
func Full(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case jsErrStoreFailed:
		return strings.Contains(apiErr.Description, "maximum bytes exceeded") ||
			strings.Contains(apiErr.Description, "maximum messages exceeded")
	case jsErrInsufficientResource, jsErrStorageExceeded:
		return true
	}
	return false
}

// Refused reports whether a KV write's error means the record certainly was
// not written: a revision conflict (see Conflict), a full bucket (Full), a
// record over max_payload.
func Refused(err error) bool {
	return Conflict(err) || Full(err) || errors.Is(err, nats.ErrMaxPayload)
}

// Unavailable reports whether err means NATS JetStream did not answer — a
// node failing over, a stream electing a leader, the connection
// reconnecting, the cluster without quorum — rather than refused the
// request: the same request may succeed when retried.
func Unavailable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case 10008, // JetStream system temporarily unavailable
			10005: // no suitable peers for placement (a peer offline)
			return true
		}
		return false
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}
