package plugin

import (
	"errors"

	"github.com/skillhost/skillhost/host/fault"
)

// reached marks an error of a call that reached a loaded skill: the
// registry's Observer heard of it (SkillCalled). It sits in the fault's
// cause chain, so a caller that keeps the error (fault.From(err).With…,
// fault.Wrap) keeps the mark; it is never on the wire.
type reached struct {
	plugin, skill string
	cause         error
}

func (r *reached) Error() string {
	if r.cause != nil {
		return r.cause.Error()
	}
	return "skill " + r.skill + " of plugin " + r.plugin
}

func (r *reached) Unwrap() error { return r.cause }

// markReached returns a copy of fe marked as reaching the skill sk of p.
func markReached(fe *fault.Error, p *Plugin, sk *Skill) *fault.Error {
	c := *fe
	c.Err = &reached{plugin: p.Manifest.Name, skill: sk.ID, cause: fe.Err}
	return &c
}

// Reached reports the plugin and skill a failed call reached: ok for every
// error Execute returns once it resolved a loaded skill (a refusal of its
// scope or rate, its input, the sandbox call, its output), which the
// registry's Observer has been told of — the caller reads it from the
// error it got back instead of being written to. Not ok for an unknown or
// loading skill.
func Reached(err error) (plugin, skill string, ok bool) {
	var r *reached
	if !errors.As(err, &r) {
		return "", "", false
	}
	return r.plugin, r.skill, true
}
