package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Agents configures agent/call beyond this host's plugins: remote A2A peers
// and the limit on nested calls (docs/guides/remote-agents.md).
type Agents struct {
	// Remote are the A2A peers reachable through agent/call, the agent_call
	// host function and plan steps of type "agent". Default: none.
	Remote []RemoteAgent `koanf:"remote"`
	// MaxCallDepth caps a chain of agent calls: every call a plugin makes
	// through agent_call and every call forwarded to a remote peer is one
	// hop, counted across hosts (header X-Skillhost-Call-Depth); one hop
	// more fails with -32106 call_depth. Default: 8.
	MaxCallDepth int `koanf:"max_call_depth"`
}

// RemoteAgent is one A2A peer. Zero fields take the defaults of
// RemoteDefaults (WithDefaults).
type RemoteAgent struct {
	// ID is the agent id callers use (target_agent_id): [a-z0-9][a-z0-9-]*,
	// at most 64 characters, unique among agents.remote. It shadows a
	// plugin of the same name.
	ID string `koanf:"id"`
	// URL is the peer's base URL; its card is read from
	// <url>/.well-known/agent-card.json.
	URL string `koanf:"url"`
	// Agent picks one plugin of a skillhost peer (its target_agent_id
	// there): calls go to that plugin's skills only. Default: none — the
	// peer is one agent whose methods are its skills (skill/execute there),
	// as any A2A peer is.
	Agent string `koanf:"agent"`
	// Fallback lists agents (remote ids or local plugin names) tried in
	// order when this one fails retryably or its breaker is open.
	Fallback []string `koanf:"fallback"`
	// Credentials is the API key sent to the peer. Default: none.
	Credentials RemoteCredentials `koanf:"credentials"`
	// Timeout bounds a whole call (attempts, waits between them, fallbacks)
	// when the caller sets a longer one or none. Default: 30s.
	Timeout time.Duration `koanf:"timeout"`
	// AttemptTimeout bounds one attempt (a hanging peer fails the attempt
	// and the call moves on to a retry or a fallback). Default: 10s.
	AttemptTimeout time.Duration `koanf:"attempt_timeout"`
	// CardTTL is how long the peer's card is used before it is read again
	// (with If-None-Match). Default: 5m.
	CardTTL time.Duration `koanf:"card_ttl"`
	// MaxResponse caps a response body, the card included. Default: 1MiB.
	MaxResponse ByteSize `koanf:"max_response"`
	// MaxSessions caps the sessions this host keeps open on a skillhost
	// peer (one per calling session; the least recently used is closed).
	// Default: 8.
	MaxSessions int `koanf:"max_sessions"`
	// AllowPrivate lists the internal address ranges (CIDR or address) the
	// peer's host name may resolve to. An IP literal in URL is always
	// allowed. Default: none (public addresses only).
	AllowPrivate []string `koanf:"allow_private"`
	// Hosts lists further "host" or "host:port" values the card's interface
	// URLs may name besides URL's own. Default: none.
	Hosts []string `koanf:"hosts"`
	// AllowInsecure permits sending credentials over plain HTTP to a host
	// that is not loopback. Default: false.
	AllowInsecure bool `koanf:"allow_insecure"`
	// Retry governs retries of retryable failures.
	Retry RemoteRetry `koanf:"retry"`
	// Breaker governs the peer's circuit breaker.
	Breaker RemoteBreaker `koanf:"breaker"`
}

// RemoteCredentials name where the API key for a peer is read (once, at
// start); it is never logged.
type RemoteCredentials struct {
	// KeyFile is a file holding the key (surrounding white space trimmed).
	KeyFile string `koanf:"key_file"`
	// KeyEnv is an environment variable holding the key.
	KeyEnv string `koanf:"key_env"`
	// Header is the header that carries the key: "Authorization" sends
	// "Bearer <key>", anything else the key itself. Default: what the
	// peer's card declares (an apiKey scheme's header, else Authorization).
	Header string `koanf:"header"`
}

// RemoteRetry is the retry policy of a peer: exponential backoff with
// jitter (randomization factor 0.5, multiplier 2), bounded by attempts and
// the call's deadline.
type RemoteRetry struct {
	// MaxAttempts counts every attempt, the first included (1 = no
	// retry). Default: 3.
	MaxAttempts int `koanf:"max_attempts"`
	// InitialInterval is the first wait. Default: 100ms.
	InitialInterval time.Duration `koanf:"initial_interval"`
	// MaxInterval caps one wait. Default: 2s.
	MaxInterval time.Duration `koanf:"max_interval"`
}

// RemoteBreaker is the circuit breaker of a peer (one per peer and host).
type RemoteBreaker struct {
	// Failures is the number of consecutive failed attempts that opens
	// the breaker. Default: 5.
	Failures int `koanf:"failures"`
	// OpenTimeout is how long the breaker stays open before it lets
	// probes through (half-open). Default: 30s.
	OpenTimeout time.Duration `koanf:"open_timeout"`
	// HalfOpenProbes is how many calls a half-open breaker lets through;
	// as many successes close it, one failure opens it again. Default: 1.
	HalfOpenProbes int `koanf:"half_open_probes"`
}

// DefaultMaxCallDepth is agents.max_call_depth's default.
const DefaultMaxCallDepth = 8

// maxCallDepthCap bounds agents.max_call_depth.
const maxCallDepthCap = 64

// RemoteDefaults returns the defaults documented on RemoteAgent.
func RemoteDefaults() RemoteAgent {
	return RemoteAgent{
		Timeout: 30 * time.Second, AttemptTimeout: 10 * time.Second, CardTTL: 5 * time.Minute,
		MaxResponse: MiB, MaxSessions: 8,
		Retry:   RemoteRetry{MaxAttempts: 3, InitialInterval: 100 * time.Millisecond, MaxInterval: 2 * time.Second},
		Breaker: RemoteBreaker{Failures: 5, OpenTimeout: 30 * time.Second, HalfOpenProbes: 1},
	}
}

// WithDefaults returns r with every zero field set from RemoteDefaults and
// Agent set to ID when empty.
func (r RemoteAgent) WithDefaults() RemoteAgent {
	d := RemoteDefaults()
	setIfZero(&r.Timeout, d.Timeout)
	setIfZero(&r.AttemptTimeout, min(d.AttemptTimeout, r.Timeout))
	setIfZero(&r.CardTTL, d.CardTTL)
	setIfZero(&r.MaxResponse, d.MaxResponse)
	setIfZero(&r.MaxSessions, d.MaxSessions)
	setIfZero(&r.Retry.MaxAttempts, d.Retry.MaxAttempts)
	setIfZero(&r.Retry.InitialInterval, d.Retry.InitialInterval)
	setIfZero(&r.Retry.MaxInterval, max(d.Retry.MaxInterval, r.Retry.InitialInterval))
	setIfZero(&r.Breaker.Failures, d.Breaker.Failures)
	setIfZero(&r.Breaker.OpenTimeout, d.Breaker.OpenTimeout)
	setIfZero(&r.Breaker.HalfOpenProbes, d.Breaker.HalfOpenProbes)
	return r
}

// AgentIDPattern is the grammar of agent ids: plugin names and remote ids.
var AgentIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// headerName is an HTTP header token.
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")

// Bounds of the agents.remote lists.
const (
	maxRemoteAgents = 256
	maxFallbacks    = 8
	maxPeerHosts    = 32
)

// validateAgents checks agents.*; every problem names its key.
func (c Config) validateAgents() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: "+format, append([]any{key}, args...)...))
	}
	a := c.Agents
	if a.MaxCallDepth < 1 || a.MaxCallDepth > maxCallDepthCap {
		bad("agents.max_call_depth", "must be 1..%d", maxCallDepthCap)
	}
	if len(a.Remote) > maxRemoteAgents {
		bad("agents.remote", "at most %d peers", maxRemoteAgents)
		return errs
	}
	seen := map[string]bool{}
	for i, r := range a.Remote {
		key := fmt.Sprintf("agents.remote[%d]", i)
		if !AgentIDPattern.MatchString(r.ID) {
			bad(key+".id", "%q must match [a-z0-9][a-z0-9-]* (at most 64 characters)", clipValue(r.ID))
		} else if seen[r.ID] {
			bad(key+".id", "%q is used twice", r.ID)
		}
		seen[r.ID] = true
		errs = append(errs, r.validate(key)...)
	}
	return errs
}

func (r RemoteAgent) validate(key string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s.%s: "+format, append([]any{key, field}, args...)...))
	}
	u, err := url.Parse(r.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		bad("url", "%q must be an http or https URL with a host", clipValue(r.URL))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		bad("url", "must carry no user info, query or fragment (credentials go in credentials.key_file or key_env)")
	case u.Scheme == "http" && !r.AllowInsecure && r.Credentials.set() && !loopbackHost(u.Hostname()):
		bad("url", "plain HTTP to %s would carry the API key in clear text: use https, or set allow_insecure: true", u.Host)
	}
	if r.Agent != "" && !AgentIDPattern.MatchString(r.Agent) {
		bad("agent", "%q must match [a-z0-9][a-z0-9-]*", clipValue(r.Agent))
	}
	if len(r.Fallback) > maxFallbacks {
		bad("fallback", "at most %d agents", maxFallbacks)
	}
	for i, f := range r.Fallback {
		if !AgentIDPattern.MatchString(f) || f == r.ID {
			bad(fmt.Sprintf("fallback[%d]", i), "%q must be another agent id", clipValue(f))
		}
	}
	cr := r.Credentials
	if cr.KeyFile != "" && cr.KeyEnv != "" {
		bad("credentials", "set key_file or key_env, not both")
	}
	if cr.Header != "" && !headerName.MatchString(cr.Header) {
		bad("credentials.header", "%q is not an HTTP header name", clipValue(cr.Header))
	}
	for field, d := range map[string]time.Duration{
		"timeout": r.Timeout, "attempt_timeout": r.AttemptTimeout, "card_ttl": r.CardTTL,
		"retry.initial_interval": r.Retry.InitialInterval, "retry.max_interval": r.Retry.MaxInterval,
		"breaker.open_timeout": r.Breaker.OpenTimeout,
	} {
		if d < 0 {
			bad(field, "must not be negative")
		}
	}
	w := r.WithDefaults()
	if w.AttemptTimeout > w.Timeout {
		bad("attempt_timeout", "%v exceeds timeout %v", w.AttemptTimeout, w.Timeout)
	}
	if w.Retry.MaxInterval < w.Retry.InitialInterval {
		bad("retry.max_interval", "%v is below retry.initial_interval %v", w.Retry.MaxInterval, w.Retry.InitialInterval)
	}
	if r.Retry.MaxAttempts < 0 || r.Retry.MaxAttempts > 10 {
		bad("retry.max_attempts", "must be 1..10 (0 = the default 3)")
	}
	if r.Breaker.Failures < 0 || r.Breaker.HalfOpenProbes < 0 || r.MaxSessions < 0 {
		bad("breaker", "failures, half_open_probes and max_sessions must not be negative")
	}
	for i, s := range r.AllowPrivate {
		if _, err := netip.ParsePrefix(s); err != nil {
			if _, err := netip.ParseAddr(s); err != nil {
				bad(fmt.Sprintf("allow_private[%d]", i), "%q is not an address or CIDR prefix", clipValue(s))
			}
		}
	}
	if len(r.Hosts) > maxPeerHosts {
		bad("hosts", "at most %d entries", maxPeerHosts)
	}
	for i, h := range r.Hosts {
		if h == "" || strings.ContainsAny(h, "/@?# ") || strings.ToLower(h) != h {
			bad(fmt.Sprintf("hosts[%d]", i), "%q must be a lower-case host or host:port", clipValue(h))
		}
	}
	return errs
}

func (c RemoteCredentials) set() bool { return c.KeyFile != "" || c.KeyEnv != "" }

// loopbackHost reports whether host is "localhost" or a loopback IP.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clipValue shortens a configured value quoted in an error.
func clipValue(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
