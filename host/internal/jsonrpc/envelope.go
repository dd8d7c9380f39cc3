package jsonrpc

import (
	"encoding/json"
	"regexp"

	"github.com/skillhost/skillhost/host/fault"
)

// SupportedVersion is the spec-001 protocol version this host speaks. By
// default any envelope `version` of the form 1, 1.x or 1.x.y is accepted.
const SupportedVersion = "1.0.0"

// The envelope member names of spec 001, read from a params object.
const (
	envRequestID = "request_id"
	envTimestamp = "timestamp"
	envVersion   = "version"
	envSessionID = "session_id"
)

var envKeys = [...]string{envRequestID, envTimestamp, envVersion, envSessionID}

func isEnvelopeKey(k string) bool {
	for _, e := range envKeys {
		if k == e {
			return true
		}
	}
	return false
}

var version1 = regexp.MustCompile(`^1(\.[0-9]{1,9}){0,2}$`)

// AcceptVersion1 is the default version check: "1", "1.x" and "1.x.y"
// (decimal digits) are accepted, anything else is refused.
func AcceptVersion1(v string) bool { return version1.MatchString(v) }

// readEnvelope reads the envelope members of req's params object. Members that
// are strings are always returned (so error data can name the request and
// session even when another member is bad); the error reports the first
// member that is not a string, or a refused version.
func readEnvelope(req *Request, accept func(string) bool) (Envelope, *fault.Error) {
	var env Envelope
	if kindOf(req.Params) != '{' {
		return env, nil
	}
	var members [len(envKeys)]json.RawMessage
	_ = req.params(func(name []byte, val json.RawMessage) error {
		for i, key := range envKeys {
			if string(name) == key {
				members[i] = val
			}
		}
		return nil
	})
	var bad *fault.Error
	versionSeen := false
	for i, key := range envKeys {
		raw := members[i]
		if raw == nil {
			continue
		}
		s, ok := stringValue(raw)
		if !ok {
			if bad == nil {
				bad = fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams,
					"envelope member %q must be a string", key).With("field", key)
			}
			continue
		}
		switch key {
		case envRequestID:
			env.RequestID = s
		case envTimestamp:
			env.Timestamp = s
		case envVersion:
			env.Version, versionSeen = s, true
		case envSessionID:
			env.SessionID = s
		}
	}
	if bad == nil && accept != nil {
		if versionSeen && !accept(env.Version) {
			bad = fault.Newf(fault.InvalidParams, fault.ReasonVersion,
				"unsupported protocol version %q: this host supports version %s (any 1.x is accepted)",
				env.Version, SupportedVersion).With("supported_version", SupportedVersion)
		}
	}
	return env, bad
}
