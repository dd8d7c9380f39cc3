package assemble

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// Settings are the operator's plugins.<name> settings, resolved when a
// plugin loads: its config and its secrets (env:NAME, file:PATH) merged
// over the manifest's permissions.config, for that plugin only. Neither the
// values nor the merged map are logged or kept anywhere but in the
// plugin's sandbox config.
type Settings struct {
	byName map[string]config.PluginSettings
	getenv func(string) (string, bool)
	key    []byte // keys Digest, so a digest says nothing of a short secret
}

// NewSettings resolves s with the process environment.
func NewSettings(s map[string]config.PluginSettings) *Settings {
	return &Settings{byName: s, getenv: os.LookupEnv, key: []byte(rand.Text())}
}

// Config is plugin.RegistryOptions.Config: the manifest's
// permissions.config with the operator's config and secrets over it. A
// secret that cannot be read refuses the plugin with an error naming the
// key and where it was looked for, never a value.
func (s *Settings) Config(m *plugin.Manifest) (map[string]string, error) {
	set, ok := s.byName[m.Name]
	if !ok || len(set.Config)+len(set.Secrets) == 0 {
		return m.Permissions.Config, nil
	}
	out := maps.Clone(m.Permissions.Config)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, set.Config)
	var errs []error
	for _, k := range sortedKeys(set.Secrets) {
		v, err := s.read(set.Secrets[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("plugins.%s.secrets.%s: %w (the plugin is not loaded)", m.Name, k, err))
			continue
		}
		out[k] = v
	}
	if len(out) > config.MaxSettingKeys {
		errs = append(errs, fmt.Errorf("plugins.%s: %d config keys with the manifest's; at most %d", m.Name, len(out), config.MaxSettingKeys))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Digest is plugin.RegistryOptions.Settings: an HMAC-SHA-256 (keyed per
// process) over the plugin name's config and its secrets' current values
// (or why one cannot be read), so a rotated secret changes it; "" for a
// plugin without settings. The digest is kept only in memory, in the
// folder's fingerprint.
func (s *Settings) Digest(name string) string {
	set, ok := s.byName[name]
	if !ok || len(set.Config)+len(set.Secrets) == 0 {
		return ""
	}
	h := hmac.New(sha256.New, s.key)
	for _, k := range sortedKeys(set.Config) {
		fmt.Fprintf(h, "c%d:%s=%d:%s\n", len(k), k, len(set.Config[k]), set.Config[k])
	}
	for _, k := range sortedKeys(set.Secrets) {
		v, err := s.read(set.Secrets[k])
		if err != nil {
			v = "\x00" + err.Error()
		}
		fmt.Fprintf(h, "s%d:%s=%d:%s\n", len(k), k, len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Files are the secret files of every plugin's settings
// (plugin.RegistryOptions.WatchFiles).
func (s *Settings) Files() []string {
	var files []string
	for _, name := range sortedKeys(s.byName) {
		set := s.byName[name]
		for _, k := range sortedKeys(set.Secrets) {
			if kind, path, err := config.ParseSecretRef(set.Secrets[k]); err == nil && kind == config.SecretFile {
				files = append(files, path)
			}
		}
	}
	return files
}

// read resolves one secret reference (validated with the config).
func (s *Settings) read(ref string) (string, error) {
	kind, name, err := config.ParseSecretRef(ref)
	if err != nil {
		return "", err
	}
	if kind == config.SecretEnv {
		v, ok := s.getenv(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		if len(v) > config.MaxSettingValue {
			return "", fmt.Errorf("environment variable %s is over %d bytes", name, config.MaxSettingValue)
		}
		return v, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", pathError(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, config.MaxSettingValue+1))
	if err != nil {
		return "", fmt.Errorf("secret file %s: %w", name, pathError(err))
	}
	if len(data) > config.MaxSettingValue {
		return "", fmt.Errorf("secret file %s is over %d bytes", name, config.MaxSettingValue)
	}
	return strings.TrimSpace(string(data)), nil
}

// pathError keeps an *os.PathError's operation, path and cause (never
// content).
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, pe.Path, pe.Err)
	}
	return err
}

// Secret states, as operators see them.
const (
	SecretSet   = "set"
	SecretUnset = "unset"
)

// View is what operators may see of one plugin's settings: the keys of its
// config and, for each secret, whether it can be read now (set) or not
// (unset). Nil when the plugin has no settings.
func (s *Settings) View(name string) (configKeys []string, secrets map[string]string) {
	set, ok := s.byName[name]
	if !ok {
		return nil, nil
	}
	configKeys = sortedKeys(set.Config)
	if len(set.Secrets) > 0 {
		secrets = make(map[string]string, len(set.Secrets))
		for k, ref := range set.Secrets {
			secrets[k] = SecretUnset
			if s.present(ref) {
				secrets[k] = SecretSet
			}
		}
	}
	return configKeys, secrets
}

// present reports whether a secret could be read, without reading it.
func (s *Settings) present(ref string) bool {
	kind, name, err := config.ParseSecretRef(ref)
	if err != nil {
		return false
	}
	if kind == config.SecretEnv {
		_, ok := s.getenv(name)
		return ok
	}
	st, err := os.Stat(name)
	return err == nil && st.Mode().IsRegular()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
