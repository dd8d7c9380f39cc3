package plan

import (
	"fmt"
	"time"
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

// Defaults of Config.
const (
	DefaultMaxSteps           = 100
	DefaultMaxDefinitionBytes = 256 << 10
	DefaultMaxRecordBytes     = 1 << 20
	DefaultWorkers            = 4
	DefaultMaxDeliver         = 5
	DefaultMaxCrashes         = 2
	DefaultAckWait            = 10 * time.Second
	DefaultRetention          = 7 * 24 * time.Hour
	DefaultMaxBucketBytes     = 1 << 30
	DefaultMaxPlanTimeout     = 24 * time.Hour
	DefaultDuplicates         = time.Hour
	// MaxPlanIDBytes is the longest plan id accepted.
	MaxPlanIDBytes = 128
	// MaxStepIDBytes is the longest step id accepted.
	MaxStepIDBytes = 64
)

// Config tunes the plan runner. Zero fields take the defaults.
type Config struct {
	// MaxSteps caps the steps of one plan. Optional. Default: 100.
	MaxSteps int
	// MaxDefinitionBytes caps the plan_definition JSON. Optional. Default: 256 KiB.
	MaxDefinitionBytes int
	// MaxRecordBytes caps one stored plan record: definition, metadata and
	// every completed step's output. A step whose output would push the
	// record past it fails the plan (ResourceExhausted, output_limit).
	// Optional. Default: 1 MiB, lowered to the store's MaxRecordBytes (the
	// NATS server's max_payload) when that is smaller.
	MaxRecordBytes int
	// Workers is how many steps this host runs at the same time (all plans
	// together). Optional. Default: 4.
	Workers int
	// MaxDeliver bounds how often one step job is delivered (crashes,
	// shutdowns, store hiccups). The last delivery fails the plan with
	// reason redelivery_exhausted instead of running the step again.
	// Optional. Default: 5.
	MaxDeliver int
	// MaxCrashes is how often a step may be running when its host dies
	// (killed, out of memory, crashed): at the next delivery after that
	// many, the step is quarantined instead of run again, failing the plan
	// with reason quarantined. A delivery while the step's host is alive (a
	// retry, a missed ack deadline) is no crash, nor is a graceful
	// shutdown. Only deliveries below MaxDeliver can reach it. Optional.
	// Default: 2.
	MaxCrashes int
	// AckWait is how long a step job may go without a sign of life before
	// JetStream hands it to another worker. Running steps report progress
	// every AckWait/3, so it does not bound a step's duration; it bounds how
	// long a plan waits after its host crashed mid-step. Optional. Default: 10s.
	AckWait time.Duration
	// Retention is how long a plan record is kept after its last change.
	// Optional. Default: 7 days.
	Retention time.Duration
	// MaxBucketBytes caps the disk used by the plans bucket (applied to an
	// existing bucket at Open). Optional. Default: 1 GiB.
	MaxBucketBytes int64
	// MaxPerKey caps the stored plans of one API key (plans.max_per_key).
	// Optional. Default: DefaultMaxPerKey (10000).
	MaxPerKey int
	// MaxBytesPerKey caps the bytes of one API key's stored plans, an
	// executing plan counted at MaxRecordBytes (plans.max_bytes_per_key).
	// Optional. Default: MaxBucketBytes/4 (at least 2×MaxRecordBytes, at
	// most MaxBucketBytes). At least MaxRecordBytes.
	MaxBytesPerKey int64
	// Reserve is the room in the bucket plan/create and plan/execute
	// leave for the checkpoints of executing plans (plans.reserve).
	// Optional. Default: MaxBucketBytes/8. At most MaxBucketBytes/2.
	Reserve int64
	// MaxPlanTimeout caps execution_options.timeout and a step's
	// timeout_ms. Optional. Default: 24h.
	MaxPlanTimeout time.Duration
	// Replicas is the replication factor of the bucket, the stream and its
	// consumer; existing ones with fewer are raised. Optional. Default: the
	// store's (store.Store.Replicas: 3 on a cluster, 1 embedded).
	Replicas int
}

// withDefaults returns cfg with defaults applied, or an error naming the
// first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	setIfZero(&cfg.MaxSteps, DefaultMaxSteps)
	setIfZero(&cfg.MaxDefinitionBytes, DefaultMaxDefinitionBytes)
	setIfZero(&cfg.MaxRecordBytes, DefaultMaxRecordBytes)
	setIfZero(&cfg.Workers, DefaultWorkers)
	setIfZero(&cfg.MaxDeliver, DefaultMaxDeliver)
	setIfZero(&cfg.MaxCrashes, DefaultMaxCrashes)
	setIfZero(&cfg.AckWait, DefaultAckWait)
	setIfZero(&cfg.Retention, DefaultRetention)
	setIfZero(&cfg.MaxBucketBytes, DefaultMaxBucketBytes)
	setIfZero(&cfg.MaxPlanTimeout, DefaultMaxPlanTimeout)
	setIfZero(&cfg.MaxPerKey, DefaultMaxPerKey)
	setIfZero(&cfg.MaxBytesPerKey, min(cfg.MaxBucketBytes, max(cfg.MaxBucketBytes/4, 2*int64(cfg.MaxRecordBytes))))
	setIfZero(&cfg.Reserve, cfg.MaxBucketBytes/8)
	switch {
	case cfg.MaxSteps < 1 || cfg.MaxSteps > 10_000:
		return cfg, fmt.Errorf("plan: MaxSteps %d: must be 1..10000", cfg.MaxSteps)
	case cfg.MaxDefinitionBytes < 1:
		return cfg, fmt.Errorf("plan: MaxDefinitionBytes %d: must be positive", cfg.MaxDefinitionBytes)
	case cfg.MaxRecordBytes < cfg.MaxDefinitionBytes+recordSlack:
		return cfg, fmt.Errorf("plan: MaxRecordBytes %d: must be at least MaxDefinitionBytes + %d", cfg.MaxRecordBytes, recordSlack)
	case cfg.Workers < 1 || cfg.Workers > 1024:
		return cfg, fmt.Errorf("plan: Workers %d: must be 1..1024", cfg.Workers)
	case cfg.MaxDeliver < 2:
		return cfg, fmt.Errorf("plan: MaxDeliver %d: must be at least 2", cfg.MaxDeliver)
	case cfg.MaxCrashes < 1 || cfg.MaxCrashes > 100:
		return cfg, fmt.Errorf("plan: MaxCrashes %d: must be 1..100", cfg.MaxCrashes)
	case cfg.AckWait < 300*time.Millisecond:
		return cfg, fmt.Errorf("plan: AckWait %v: must be at least 300ms", cfg.AckWait)
	case cfg.Retention < time.Minute:
		return cfg, fmt.Errorf("plan: Retention %v: must be at least 1m", cfg.Retention)
	case cfg.MaxBucketBytes < int64(cfg.MaxRecordBytes):
		return cfg, fmt.Errorf("plan: MaxBucketBytes %d: must be at least MaxRecordBytes", cfg.MaxBucketBytes)
	case cfg.MaxPerKey < 1:
		return cfg, fmt.Errorf("plan: MaxPerKey %d: must be positive", cfg.MaxPerKey)
	case cfg.MaxBytesPerKey < int64(cfg.MaxRecordBytes):
		return cfg, fmt.Errorf("plan: MaxBytesPerKey %d: must be at least MaxRecordBytes (%d)", cfg.MaxBytesPerKey, cfg.MaxRecordBytes)
	case cfg.Reserve < 0 || cfg.Reserve > cfg.MaxBucketBytes/2:
		return cfg, fmt.Errorf("plan: Reserve %d: must be 0..MaxBucketBytes/2", cfg.Reserve)
	case cfg.MaxPlanTimeout < time.Second:
		return cfg, fmt.Errorf("plan: MaxPlanTimeout %v: must be at least 1s", cfg.MaxPlanTimeout)
	case cfg.Replicas < 0 || cfg.Replicas > 5:
		return cfg, fmt.Errorf("plan: Replicas %d: must be 0 (the store's) or 1..5", cfg.Replicas)
	}
	return cfg, nil
}

// recordSlack is room for the record's bookkeeping beyond the definition.
const recordSlack = 16 << 10

func setIfZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
