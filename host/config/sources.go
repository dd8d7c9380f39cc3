package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// PluginSources are where plugins come from besides the plugin folder
// (docs/guides/plugins.md, "Plugins from an OCI registry").
type PluginSources struct {
	// OCI are plugins pulled from OCI registries into <data>/plugins-oci.
	// Default: none.
	OCI []OCISource `koanf:"oci"`
}

// OCISource is one plugin in an OCI registry (an artifact pushed with
// `skillhost plugin push`).
type OCISource struct {
	// Ref is the artifact's reference, registry/repository:tag or
	// registry/repository@sha256:<hex> (an optional oci:// prefix is
	// dropped). Required.
	Ref string `koanf:"ref"`
	// PlainHTTP talks to the registry over plain HTTP (a local registry).
	// Default: false (HTTPS).
	PlainHTTP bool `koanf:"plain_http"`
	// Poll re-resolves a tag this often and pulls it again when it moved.
	// Default: 0 (pulled at start only). At least 1s; not with a digest.
	Poll time.Duration `koanf:"poll"`
}

// PluginSettings are the operator's settings for one plugin (the YAML
// file's plugins.<name>), merged over its manifest's permissions.config.
type PluginSettings struct {
	// Config are plain key/values. Default: none.
	Config map[string]string `koanf:"config"`
	// Secrets are key/values read when the plugin loads: each value is
	// env:NAME (an environment variable) or file:PATH (a file's content,
	// surrounding white space trimmed). Never logged nor shown. Default:
	// none.
	Secrets map[string]string `koanf:"secrets"`
}

// Caps on the operator's plugin settings: those of a manifest's
// permissions.config.
const (
	// MaxSettingKeys caps the keys of one plugin's config and secrets
	// together.
	MaxSettingKeys = 256
	// MaxSettingKey caps a key's bytes.
	MaxSettingKey = 256
	// MaxSettingValue caps a value's bytes (a secret file's too).
	MaxSettingValue = 64 << 10
)

// PluginsDirKey is the entry of the mapping form of `plugins` that names
// the plugin folder (a plugin named "dir" cannot have settings).
const PluginsDirKey = "dir"

var (
	rePluginName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	reEnvName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// reOCIRef is a registry/repository[:tag][@digest] reference with an
	// explicit registry host (distribution's reference grammar).
	reOCIRef = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?` +
		`(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+` +
		`(?::[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127})?` +
		`(?:@sha256:[a-f0-9]{64})?$`)
)

// TrimOCIScheme drops an oci:// prefix from a reference.
func TrimOCIScheme(ref string) string { return strings.TrimPrefix(ref, "oci://") }

// OCIRefPinned reports whether ref names a digest (immutable).
func OCIRefPinned(ref string) bool { return strings.Contains(ref, "@") }

// validateSources checks sources.oci.
func (c Config) validateSources() []error {
	var errs []error
	seen := map[string]int{}
	for i, s := range c.Sources.OCI {
		key := fmt.Sprintf("sources.oci[%d]", i)
		ref := TrimOCIScheme(s.Ref)
		first, _, _ := strings.Cut(ref, "/")
		switch {
		case s.Ref == "":
			errs = append(errs, fmt.Errorf("config %s.ref: is required", key))
		case len(ref) > 512 || !reOCIRef.MatchString(ref):
			errs = append(errs, fmt.Errorf("config %s.ref: %q is not registry/repository:tag or registry/repository@sha256:<hex>", key, s.Ref))
		case !strings.ContainsAny(first, ".:[") && first != "localhost":
			errs = append(errs, fmt.Errorf("config %s.ref: %q names no registry host (write it in full, e.g. ghcr.io/%s)", key, s.Ref, ref))
		case !strings.ContainsAny(ref[len(first):], ":@"):
			errs = append(errs, fmt.Errorf("config %s.ref: %q has no tag or digest (write :<tag> or @sha256:<hex>)", key, s.Ref))
		}
		if j, dup := seen[ref]; dup && ref != "" {
			errs = append(errs, fmt.Errorf("config %s.ref: %q is already sources.oci[%d]", key, s.Ref, j))
		}
		seen[ref] = i
		switch {
		case s.Poll < 0:
			errs = append(errs, fmt.Errorf("config %s.poll: must not be negative", key))
		case s.Poll > 0 && s.Poll < time.Second:
			errs = append(errs, fmt.Errorf("config %s.poll: %s is under the 1s minimum", key, s.Poll))
		case s.Poll > 0 && OCIRefPinned(ref):
			errs = append(errs, fmt.Errorf("config %s.poll: %q is pinned by digest and never moves; drop poll or use a tag", key, s.Ref))
		}
	}
	return errs
}

// validatePluginSettings checks plugins.<name>. Errors name keys, never a
// value (a secret may have been written in by mistake).
func (c Config) validatePluginSettings() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: "+format, append([]any{key}, args...)...))
	}
	for _, name := range sortedNames(c.PluginSettings) {
		s := c.PluginSettings[name]
		key := "plugins." + name
		if len(name) > 64 || !rePluginName.MatchString(name) {
			bad(key, "%q is not a plugin name ([a-z0-9][a-z0-9-]*, at most 64 characters)", name)
			continue
		}
		if n := len(s.Config) + len(s.Secrets); n > MaxSettingKeys {
			bad(key, "has %d config and secrets keys; at most %d", n, MaxSettingKeys)
		}
		for _, k := range sortedNames(s.Config) {
			switch {
			case k == "" || len(k) > MaxSettingKey:
				bad(key+".config", "keys must be 1..%d bytes", MaxSettingKey)
			case len(s.Config[k]) > MaxSettingValue:
				bad(fmt.Sprintf("%s.config.%s", key, k), "is over %d bytes", MaxSettingValue)
			}
			if _, dup := s.Secrets[k]; dup {
				bad(fmt.Sprintf("%s.config.%s", key, k), "is also a secret; give it once")
			}
		}
		for _, k := range sortedNames(s.Secrets) {
			if k == "" || len(k) > MaxSettingKey {
				bad(key+".secrets", "keys must be 1..%d bytes", MaxSettingKey)
				continue
			}
			if _, _, err := ParseSecretRef(s.Secrets[k]); err != nil {
				bad(fmt.Sprintf("%s.secrets.%s", key, k), "%v", err)
			}
		}
	}
	return errs
}

// Secret sources.
const (
	SecretEnv  = "env"
	SecretFile = "file"
)

// ParseSecretRef splits a secret's reference, env:NAME or file:PATH, into
// its kind (SecretEnv, SecretFile) and the variable or path. Its error
// never repeats the value (it may be a secret written in by mistake).
func ParseSecretRef(ref string) (kind, name string, err error) {
	kind, name, _ = strings.Cut(ref, ":")
	switch {
	case kind == SecretEnv && reEnvName.MatchString(name):
		return kind, name, nil
	case kind == SecretEnv:
		return "", "", fmt.Errorf("env: must name an environment variable ([A-Za-z_][A-Za-z0-9_]*)")
	case kind == SecretFile && name != "" && !strings.ContainsRune(name, 0):
		return kind, name, nil
	case kind == SecretFile:
		return "", "", fmt.Errorf("file: must name a file")
	default:
		return "", "", fmt.Errorf("must be env:NAME or file:PATH (the value itself is never written here)")
	}
}

func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
