package devkit

import (
	"strings"

	"net/netip"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// devPolicy is the policy `plugin test` and `plugin validate` apply: the
// operator defaults (plugin.DefaultPolicy: limits capped at 30s, 256MiB,
// 16MiB output, concurrency 16) but granting exactly the network hosts and
// read-only paths the manifest asks for, since a plugin author tests what
// the plugin needs. Limits over the default caps are still refused, as a
// default host would refuse them.
func devPolicy(m *plugin.Manifest) config.Policy {
	p := config.DefaultPolicy()
	p.AllowedHostPatterns = append([]string(nil), m.Permissions.AllowedHosts...)
	for _, g := range m.Permissions.AllowedPaths {
		p.AllowedPathPrefixes = append(p.AllowedPathPrefixes, g.HostPath)
	}
	return p
}

// splitErrors flattens an errors.Join tree into its messages.
func splitErrors(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, splitErrors(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

// PrivateRanges are the loopback and private address ranges; give them to
// TestOptions.AllowPrivate to let http_fetch reach a local test server.
func PrivateRanges() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// lineError is an errors.Join that prints on one line ("; "-separated),
// so a command can report it as one line on stderr.
type lineError struct{ errs []error }

func (e *lineError) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return strings.Join(msgs, "; ")
}

func (e *lineError) Unwrap() []error { return e.errs }

// oneLine flattens a joined error to a lineError; other errors pass as is.
func oneLine(err error) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	return &lineError{errs: j.Unwrap()}
}
