package store

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
)

// storeErr turns an error from NATS into a fault carrying the session id.
// A canceled context stays Canceled; a store that did not answer (NATS
// unavailable, a request out of time) is Internal with reason
// store_unavailable (retryable); a full bucket is ResourceExhausted;
// anything else is Internal.
func storeErr(err error, sessionID, op string) *fault.Error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return withSession(fe, sessionID)
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && strings.Contains(apiErr.Description, "maximum bytes exceeded"):
		return withSession(fault.Wrap(fault.ResourceExhausted, fault.ReasonStorageFull, err, op+": state storage is full"), sessionID)
	case errors.Is(err, nats.ErrMaxPayload):
		return withSession(fault.Wrap(fault.InvalidParams, fault.ReasonValueTooLarge, err, op+": record larger than the NATS max_payload"), sessionID)
	case Unavailable(err), errors.Is(err, context.DeadlineExceeded):
		// A store request that ran out of time (nats.go's 5 s API timeout,
		// or the caller's deadline) is the store not answering, not a skill
		// timeout: typically a stream leader moving to another node.
		return withSession(fault.Wrap(fault.Internal, fault.ReasonStoreUnavailable, err,
			op+": the state store did not answer (NATS failing over?); retry"), sessionID)
	}
	f := fault.From(err)
	if f.Kind == fault.Internal {
		f = fault.Wrap(fault.Internal, fault.ReasonInternal, err, op+": "+err.Error())
	}
	return withSession(f, sessionID)
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
