package events

import (
	"fmt"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// Names of the JetStream objects. They are part of the on-disk and
// on-cluster layout.
const (
	Stream      = "SKILLHOST_EVENTS"
	SubjectBase = "skillhost.events"
)

// MaxEventBytes caps one stored event (envelope included).
const MaxEventBytes = 128 << 10

// Config is the events.* section of the configuration, which the bus takes
// as it is (config.Events documents each key and its default; a zero
// max_subscribers_per_key is no per-key share). The zero Config stands for
// config.Defaults().Events — the whole section, never field by field.
type Config = config.Events

// resolve returns c checked (a zero Config is the defaults), or an error
// naming the first invalid key.
func resolve(c Config) (Config, error) {
	if c == (Config{}) {
		c = config.Defaults().Events
	}
	switch {
	case c.Retention < time.Minute:
		return c, fmt.Errorf("events: events.retention %v: must be at least 1m", c.Retention)
	case c.MaxBytes < config.MiB:
		return c, fmt.Errorf("events: events.max_bytes %d: must be at least 1 MiB", c.MaxBytes)
	case c.DedupeWindow < time.Second || c.DedupeWindow > c.Retention:
		return c, fmt.Errorf("events: events.dedupe_window %v: must be 1s..events.retention (%v)", c.DedupeWindow, c.Retention)
	case c.MaxSubscribers < 1:
		return c, fmt.Errorf("events: events.max_subscribers %d: must be positive", c.MaxSubscribers)
	case c.MaxSubscribersPerKey < 0 || c.MaxSubscribersPerKey > c.MaxSubscribers:
		return c, fmt.Errorf("events: events.max_subscribers_per_key %d: must be 0..events.max_subscribers", c.MaxSubscribersPerKey)
	}
	return c, nil
}
