package plan

import (
	"fmt"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// Names of the JetStream objects the plan runner uses. They are part of the
// on-disk and on-cluster layout.
const (
	Bucket       = "skillhost_plans"       // KV bucket: one record per plan
	Stream       = "SKILLHOST_PLAN_STEPS"  // work-queue stream of step jobs
	SubjectBase  = "skillhost.plans.steps" // job subjects: SubjectBase + "." + execution id
	ConsumerName = "skillhost_plan_runner" // the durable pull consumer every host shares
	subjectAll   = SubjectBase + ".*"      // the stream's subjects and the consumer's filter
)

// Limits of the plan runner that are not configuration keys.
const (
	// DefaultDuplicates is the dedupe window of the job streams.
	DefaultDuplicates = time.Hour
	// MaxPlanIDBytes is the longest plan id accepted.
	MaxPlanIDBytes = 128
	// MaxStepIDBytes is the longest step id accepted.
	MaxStepIDBytes = 64
)

// Config is the plans.* section of the configuration, which the runner
// takes as it is (config.Plans documents each key and its default). The
// zero Config stands for config.Defaults().Plans — the whole section, never
// field by field.
type Config = config.Plans

// settings are the section as the runner uses it: a zero
// max_bytes_per_key and reserve resolved from the bucket's size, the record
// cap lowered to what the NATS server accepts, the replicas the store
// chose.
type settings struct {
	Config
	replicas int
}

// resolve returns cfg checked, with its zeros resolved (a zero Config is
// the defaults), or an error naming the first invalid key.
func resolve(cfg Config) (settings, error) {
	if cfg == (Config{}) {
		cfg = config.Defaults().Plans
	}
	if cfg.MaxBytesPerKey == 0 {
		cfg.MaxBytesPerKey = min(cfg.MaxBucket, max(cfg.MaxBucket/4, 2*cfg.MaxRecord))
	}
	if cfg.Reserve == 0 {
		cfg.Reserve = cfg.MaxBucket / 8
	}
	switch {
	case cfg.MaxSteps < 1 || cfg.MaxSteps > 10_000:
		return settings{}, fmt.Errorf("plan: plans.max_steps %d: must be 1..10000", cfg.MaxSteps)
	case cfg.MaxDefinition < 1:
		return settings{}, fmt.Errorf("plan: plans.max_definition %d: must be positive", cfg.MaxDefinition)
	case cfg.MaxRecord < cfg.MaxDefinition+recordSlack:
		return settings{}, fmt.Errorf("plan: plans.max_record %d: must be at least plans.max_definition + %d", cfg.MaxRecord, recordSlack)
	case cfg.Workers < 1 || cfg.Workers > 1024:
		return settings{}, fmt.Errorf("plan: plans.workers %d: must be 1..1024", cfg.Workers)
	case cfg.MaxDeliver < 2:
		return settings{}, fmt.Errorf("plan: plans.max_deliver %d: must be at least 2", cfg.MaxDeliver)
	case cfg.MaxCrashes < 1 || cfg.MaxCrashes > 100:
		return settings{}, fmt.Errorf("plan: plans.max_crashes %d: must be 1..100", cfg.MaxCrashes)
	case cfg.AckWait < 300*time.Millisecond:
		return settings{}, fmt.Errorf("plan: plans.ack_wait %v: must be at least 300ms", cfg.AckWait)
	case cfg.Retention < time.Minute:
		return settings{}, fmt.Errorf("plan: plans.retention %v: must be at least 1m", cfg.Retention)
	case cfg.MaxBucket < cfg.MaxRecord:
		return settings{}, fmt.Errorf("plan: plans.max_bucket %d: must be at least plans.max_record", cfg.MaxBucket)
	case cfg.MaxPerKey < 1:
		return settings{}, fmt.Errorf("plan: plans.max_per_key %d: must be positive", cfg.MaxPerKey)
	case cfg.MaxBytesPerKey < cfg.MaxRecord:
		return settings{}, fmt.Errorf("plan: plans.max_bytes_per_key %d: must be at least plans.max_record (%d)", cfg.MaxBytesPerKey, cfg.MaxRecord)
	case cfg.Reserve > cfg.MaxBucket/2:
		return settings{}, fmt.Errorf("plan: plans.reserve %d: must be 0..plans.max_bucket/2", cfg.Reserve)
	case cfg.MaxTimeout < time.Second:
		return settings{}, fmt.Errorf("plan: plans.max_timeout %v: must be at least 1s", cfg.MaxTimeout)
	case cfg.WebhookAttempts < 1:
		return settings{}, fmt.Errorf("plan: plans.webhook_attempts %d: must be positive", cfg.WebhookAttempts)
	}
	return settings{Config: cfg}, nil
}

// recordSlack is room for the record's bookkeeping beyond the definition.
const recordSlack = 16 << 10
