package config_test

import (
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/config"
)

// Every per-key share lies between 0 (none) and its host-wide cap, and the
// error names the share's key and the cap's.
func TestValidateShares(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		mutate func(*config.Config)
		want   string // "" = valid
	}{
		{"defaults", func(*config.Config) {}, ""},
		{"no per-key shares", func(c *config.Config) {
			c.HTTP.MaxConnsPerAddr, c.Events.MaxSubscribersPerKey, c.A2A.MaxStreamsPerKey, c.MCP.MaxSessionsPerKey = 0, 0, 0, 0
		}, ""},
		{"share equal to the cap", func(c *config.Config) { c.HTTP.MaxConns, c.HTTP.MaxConnsPerAddr = 8, 8 }, ""},
		{"address share over the cap", func(c *config.Config) { c.HTTP.MaxConns = 100 }, "http.max_conns_per_addr: 256 must be 0 (no per-key share) up to http.max_conns (100)"},
		{"events share over the cap", func(c *config.Config) { c.Events.MaxSubscribersPerKey = 300 }, "events.max_subscribers_per_key: 300"},
		{"negative stream share", func(c *config.Config) { c.A2A.MaxStreamsPerKey = -1 }, "a2a.max_streams_per_key: -1"},
		{"no stream cap", func(c *config.Config) { c.A2A.MaxStreams = 0 }, "a2a.max_streams: must be greater than zero"},
		{"no MCP session cap", func(c *config.Config) { c.MCP.MaxSessions = 0 }, "mcp.max_sessions: must be greater than zero"},
		{"MCP share over the cap", func(c *config.Config) { c.MCP.MaxSessionsPerKey = 2000 }, "mcp.max_sessions_per_key: 2000"},
		{"no running-call cap", func(c *config.Config) { c.RPC.MaxRunningCalls = 0 }, "rpc.max_running_calls: must be greater than zero"},
		{"running-call share over the cap", func(c *config.Config) { c.RPC.MaxRunningCalls = 8 }, "auth.limits.max_concurrent_calls: 16 must be 0 (no per-key share) up to rpc.max_running_calls (8)"},
		{"negative reserve", func(c *config.Config) { c.HTTP.ReservedConns = -1 }, "http.reserved_conns: -1 must be 0..1024"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := config.Defaults()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate: %v; want it to say %q", err, tt.want)
			}
		})
	}
}
