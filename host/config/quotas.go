package config

import "fmt"

// validateQuotas checks the per-key quotas and reserves of the task and
// plan buckets (0 means derived from the bucket's size).
func (c Config) validateQuotas() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: "+format, append([]any{key}, args...)...))
	}
	if c.A2A.MaxBucket > 0 && c.A2A.MaxBucket < 8*MiB {
		bad("a2a.max_bucket", "%s: must be at least 8MiB", c.A2A.MaxBucket)
	}
	// Two of the largest task records (4 MiB each): one task may run.
	if b := c.A2A.MaxTaskBytesPerKey; b != 0 && (b < 8*MiB || b > c.A2A.MaxBucket) {
		bad("a2a.max_task_bytes_per_key", "%s: must be 0 (a quarter of a2a.max_bucket) or 8MiB..a2a.max_bucket (%s)", b, c.A2A.MaxBucket)
	}
	if r := c.A2A.Reserve; r > c.A2A.MaxBucket/2 {
		bad("a2a.reserve", "%s: must be 0 (an eighth of a2a.max_bucket) or at most half of a2a.max_bucket (%s)", r, c.A2A.MaxBucket)
	}
	if b := c.Plans.MaxBytesPerKey; b != 0 && (b < 2*c.Plans.MaxRecord || b > c.Plans.MaxBucket) {
		bad("plans.max_bytes_per_key", "%s: must be 0 (a quarter of plans.max_bucket) or twice plans.max_record (%s)..plans.max_bucket (%s)",
			b, 2*c.Plans.MaxRecord, c.Plans.MaxBucket)
	}
	if r := c.Plans.Reserve; r > c.Plans.MaxBucket/2 {
		bad("plans.reserve", "%s: must be 0 (an eighth of plans.max_bucket) or at most half of plans.max_bucket (%s)", r, c.Plans.MaxBucket)
	}
	return errs
}
