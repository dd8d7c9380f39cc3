package store

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
)

// storeErr turns an error from NATS into a fault carrying the session id.
// Context errors keep their kind (Timeout, Canceled); a full bucket is
// ResourceExhausted; anything else is Internal.
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
	}
	f := fault.From(err)
	if f.Kind == fault.Internal {
		f = fault.Wrap(fault.Internal, fault.ReasonInternal, err, op+": "+err.Error())
	}
	return withSession(f, sessionID)
}
