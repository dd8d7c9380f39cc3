package config

import (
	"fmt"
	"time"
)

// Bounds of the task lease keys (a2a.lease_ttl, a2a.lease_sweep).
const (
	minLeaseTTL   = time.Second
	maxLeaseTTL   = time.Hour
	minLeaseSweep = 100 * time.Millisecond
)

// validateLeases checks a2a.lease_ttl and a2a.lease_sweep: a sweep longer
// than the TTL would only delay what the TTL promises.
func (c Config) validateLeases() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: "+format, append([]any{key}, args...)...))
	}
	if t := c.A2A.LeaseTTL; t < minLeaseTTL || t > maxLeaseTTL {
		bad("a2a.lease_ttl", "%v: must be %v..%v", t, minLeaseTTL, maxLeaseTTL)
	}
	if s := c.A2A.LeaseSweep; s < minLeaseSweep || s > c.A2A.LeaseTTL {
		bad("a2a.lease_sweep", "%v: must be %v..a2a.lease_ttl (%v)", s, minLeaseSweep, c.A2A.LeaseTTL)
	}
	return errs
}
