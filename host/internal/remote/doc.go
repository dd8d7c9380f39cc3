// Package remote reaches the A2A peers of agents.remote: it reads each
// peer's Agent Card (cached with its ETag, refreshed after card_ttl), picks
// an interface with spec 000's selectInterface (JSON-RPC 1.0 first, then
// 0.3) and forwards a call: when the card declares skillhost's extension,
// `_cleveragents/skill/execute` (the peer as a whole: its skills are the
// agent's methods) or, with the peer's agent key, `_cleveragents/agent/call`
// to that plugin — in a session this host keeps open on the peer for the
// calling session; otherwise A2A SendMessage with metadata.skillId, through
// the official a2a-go v2 client.
//
// Every attempt goes through the peer's circuit breaker (sony/gobreaker/v2);
// retryable outcomes — connection refused or reset, HTTP 5xx or 429, an
// attempt that ran out of attempt_timeout, a peer's -32104, -32106
// pool_saturated or rate_limited, -32603 store_unavailable — are retried
// with exponential backoff and jitter (cenkalti/backoff/v5), bounded by
// retry.max_attempts and the call's deadline. Nothing else is retried.
//
//	peers, err := remote.New(cfg.Agents.Remote, remote.Options{Logger: log, Observer: m})
//	res, err := peers.Call(ctx, remote.Call{ID: "billing", Method: "charge", Input: in, Depth: 1})
//
// Connections are dialed through the dial guard of http_fetch: a peer's
// host name may resolve only to public addresses unless its allow_private
// lists the range (an IP literal in url is allowed as written), no proxy is
// used, no redirect is followed, and requests go only to the url's own host
// or those listed in hosts (a card cannot send this host's credentials
// elsewhere). Response bodies, the card's included, are capped at
// max_response.
//
// Peers is safe for concurrent use.
package remote
