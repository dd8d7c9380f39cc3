// Package share counts the units of a shared resource (open streams,
// sessions, connections, running calls) against a host-wide cap and a
// per-holder share of it, so that no one holder (an API key, a client
// address) can take what the others need.
//
// A Counter has one host-wide Limit and one Share per holder. Acquire takes
// one unit for a holder, or refuses with a *fault.Error: the Full error when
// the host holds Limit units, the Over error when the holder holds Share
// units. Each refusal carries the resource and the configuration key of the
// cap that refused, and wraps ErrFull or ErrOverShare for errors.Is. The
// empty holder ("") counts against the host-wide cap only: the trusted local
// principals (stdio, loopback without keys) are one tenant.
//
// Acquire and its release are O(1) (one map entry per holder with at least
// one unit, so the map never outgrows Limit) and safe for concurrent use.
//
//	streams := share.New(share.Config{Resource: "events_streams", What: "event streams",
//		Limit: 256, LimitKey: "events.max_subscribers", Share: 64, ShareKey: "events.max_subscribers_per_key"})
//	release, err := streams.Acquire("key:alice")
//	if err != nil {
//		return err // -32106: key_quota (alice's share) or the Full error
//	}
//	defer release()
package share
