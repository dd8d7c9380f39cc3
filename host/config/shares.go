package config

import "fmt"

// MCP configures MCP over Streamable HTTP (POST /mcp).
type MCP struct {
	// MaxSessions caps the MCP sessions open at once on this host (each
	// ends when deleted or after 30 minutes unused).
	MaxSessions int `koanf:"max_sessions"`
	// MaxSessionsPerKey caps those one key holds (0: no per-key share).
	MaxSessionsPerKey int `koanf:"max_sessions_per_key"`
}

// validateShares checks every host-wide cap of a shared resource and the
// per-key (or per-address) share of it: the cap at least 1, the share
// between 0 (none) and the cap.
func (c Config) validateShares() []error {
	var errs []error
	for _, s := range []struct {
		capKey, shareKey string
		cap, share       int
		capChecked       bool // Validate's list of positive keys has the cap
	}{
		{"http.max_conns", "http.max_conns_per_addr", c.HTTP.MaxConns, c.HTTP.MaxConnsPerAddr, true},
		{"events.max_subscribers", "events.max_subscribers_per_key", c.Events.MaxSubscribers, c.Events.MaxSubscribersPerKey, true},
		{"a2a.max_streams", "a2a.max_streams_per_key", c.A2A.MaxStreams, c.A2A.MaxStreamsPerKey, false},
		{"mcp.max_sessions", "mcp.max_sessions_per_key", c.MCP.MaxSessions, c.MCP.MaxSessionsPerKey, false},
		{"rpc.max_running_calls", "auth.limits.max_concurrent_calls", c.RPC.MaxRunningCalls, c.Auth.Limits.MaxConcurrentCalls, false},
	} {
		if s.cap < 1 {
			if !s.capChecked {
				errs = append(errs, fmt.Errorf("config %s: must be greater than zero", s.capKey))
			}
			continue
		}
		if s.share < 0 || s.share > s.cap {
			errs = append(errs, fmt.Errorf("config %s: %d must be 0 (no per-key share) up to %s (%d)", s.shareKey, s.share, s.capKey, s.cap))
		}
	}
	if n := c.HTTP.ReservedConns; n < 0 || n > 1024 {
		errs = append(errs, fmt.Errorf("config http.reserved_conns: %d must be 0..1024", n))
	}
	return errs
}
