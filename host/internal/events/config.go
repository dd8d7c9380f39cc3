package events

import (
	"fmt"
	"time"
)

// Names of the JetStream objects. They are part of the on-disk and
// on-cluster layout.
const (
	Stream      = "SKILLHOST_EVENTS"
	SubjectBase = "skillhost.events"
)

// Defaults of Config.
const (
	DefaultRetention      = 24 * time.Hour
	DefaultMaxBytes       = 256 << 20
	DefaultDedupeWindow   = time.Hour
	DefaultMaxSubscribers = 256
	// DefaultMaxSubscribersPerKey is a quarter of DefaultMaxSubscribers.
	DefaultMaxSubscribersPerKey = 64
	// MaxEventBytes caps one stored event (envelope included).
	MaxEventBytes = 128 << 10
)

// Config tunes the bus. Zero fields take the defaults.
type Config struct {
	// Retention is how long events are kept for resuming subscribers.
	// Optional. Default: 24h.
	Retention time.Duration
	// MaxBytes caps the stream's disk use; the oldest events go first.
	// Optional. Default: 256 MiB.
	MaxBytes int64
	// DedupeWindow is how long a dedupe id is remembered (at most
	// Retention). Optional. Default: 1h.
	DedupeWindow time.Duration
	// MaxSubscribers caps the subscriptions open at once on this host.
	// Optional. Default: 256.
	MaxSubscribers int
	// MaxSubscribersPerKey caps the subscriptions of one holder
	// (Filter.Holder) within MaxSubscribers; -1: no per-holder cap.
	// Optional. Default: 64, or MaxSubscribers when that is smaller.
	MaxSubscribersPerKey int
	// Replicas is the stream's replication factor. Optional. Default: 1.
	Replicas int
}

func (c Config) withDefaults() (Config, error) {
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.DedupeWindow == 0 {
		c.DedupeWindow = min(DefaultDedupeWindow, c.Retention)
	}
	if c.MaxSubscribers == 0 {
		c.MaxSubscribers = DefaultMaxSubscribers
	}
	switch {
	case c.MaxSubscribersPerKey == 0:
		c.MaxSubscribersPerKey = min(DefaultMaxSubscribersPerKey, c.MaxSubscribers)
	case c.MaxSubscribersPerKey < 0:
		c.MaxSubscribersPerKey = 0 // share.Config: no per-holder cap
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	switch {
	case c.Retention < time.Minute:
		return c, fmt.Errorf("events: Retention %v: must be at least 1m", c.Retention)
	case c.MaxBytes < 1<<20:
		return c, fmt.Errorf("events: MaxBytes %d: must be at least 1 MiB", c.MaxBytes)
	case c.DedupeWindow < time.Second || c.DedupeWindow > c.Retention:
		return c, fmt.Errorf("events: DedupeWindow %v: must be 1s..Retention (%v)", c.DedupeWindow, c.Retention)
	case c.MaxSubscribers < 1:
		return c, fmt.Errorf("events: MaxSubscribers %d: must be positive", c.MaxSubscribers)
	case c.Replicas < 1 || c.Replicas > 5:
		return c, fmt.Errorf("events: Replicas %d: must be 1..5", c.Replicas)
	}
	return c, nil
}
