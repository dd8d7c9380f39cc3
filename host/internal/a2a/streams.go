package a2a

import (
	"context"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/share"
)

// newStreamCounter counts the task streams of every method that streams a
// task (SendStreamingMessage, SubscribeToTask, message/stream,
// tasks/resubscribe and their REST routes): each holds an ordered consumer
// and a goroutine while its client reads.
func newStreamCounter(cfg ServiceConfig) *share.Counter {
	limit, per := cfg.MaxStreams, cfg.MaxStreamsPerKey // a2a.max_streams, a2a.max_streams_per_key (0: no share)
	return share.New(share.Config{
		Resource: "task_streams", What: "task streams",
		Limit: limit, LimitKey: "a2a.max_streams", Share: per, ShareKey: "a2a.max_streams_per_key",
		Full: fault.Newf(fault.ResourceExhausted, fault.ReasonTooManySubscribers,
			"%d task streams are open on this host, the limit (a2a.max_streams); retry later", limit),
		Over: fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"this key holds %d task streams, its share of this host (a2a.max_streams_per_key); close one first", per),
	})
}

// admitStream takes a task stream unit for the caller: its key's share
// (a session token's counts as its key's), or the host-wide cap alone for
// local principals. release frees it; TaskStream.Close calls it.
func (s *Service) admitStream(ctx context.Context) (release func(), err error) {
	who := auth.From(ctx)
	holder := ""
	if who.Limited() {
		holder = who.Owner()
	}
	release, err = s.streams.Acquire(holder)
	if err != nil {
		return nil, fault.From(err).With("key_id", who.KeyID())
	}
	return release, nil
}

// Streams counts the open task streams (for metrics and admin).
func (s *Service) Streams() *share.Counter { return s.streams }
