package config

import (
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/knadh/koanf/parsers/yaml"
)

// readFile parses the YAML file path and takes its plugin settings out:
// `plugins` is either the plugin folder (a string) or a mapping of
// plugins.<name> sections, whose entry "dir" names the folder. The
// sections are read from the parsed document as written (koanf would split
// a dotted config key such as "api.key" into nested keys); what remains,
// with `plugins` set to the folder or dropped, is returned for koanf.
func readFile(path string) (map[string]any, map[string]PluginSettings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	doc, err := yaml.Parser().Unmarshal(data)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	section, ok := doc["plugins"].(map[string]any)
	if !ok {
		return doc, nil, nil
	}
	delete(doc, "plugins")
	settings := map[string]PluginSettings{}
	names := make([]string, 0, len(section))
	for name := range section {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := section[name]
		if name == PluginsDirKey {
			dir, ok := v.(string)
			if !ok {
				return nil, nil, fmt.Errorf("config file %s: plugins.%s: must be the plugin folder (a string); a plugin named %q cannot have settings", path, name, name)
			}
			doc["plugins"] = dir
			continue
		}
		s, err := decodeSettings("plugins."+name, v)
		if err != nil {
			return nil, nil, fmt.Errorf("config file %s: %w", path, err)
		}
		settings[name] = s
	}
	return doc, settings, nil
}

// decodeSettings decodes one plugins.<name> section strictly. Its errors
// name keys, never values.
func decodeSettings(key string, v any) (PluginSettings, error) {
	var s PluginSettings
	if v == nil {
		return s, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return s, fmt.Errorf("%s: must be a mapping with config and secrets", key)
	}
	for _, field := range sortedNames(m) {
		var err error
		switch field {
		case "config":
			s.Config, err = decodeStrings(key+".config", m[field])
		case "secrets":
			s.Secrets, err = decodeStrings(key+".secrets", m[field])
		default:
			msg := fmt.Sprintf("%s: unknown key %s (a plugin's section has config and secrets", key, field)
			if near := nearest(field, map[string]bool{"config": true, "secrets": true}); near != "" {
				msg += "; did you mean " + near + "?"
			}
			return s, fmt.Errorf("%s)", msg)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// decodeStrings decodes a mapping of scalars into strings (YAML's 3 and
// true are "3" and "true", as in a manifest's permissions.config).
func decodeStrings(key string, v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: must be a mapping of keys to values", key)
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		switch x := val.(type) {
		case string:
			out[k] = x
		case bool:
			out[k] = strconv.FormatBool(x)
		case int, int64, uint64, float64:
			out[k] = fmt.Sprint(x)
		default:
			return nil, fmt.Errorf("%s.%s: must be a single value (a string, number or boolean)", key, k)
		}
	}
	return out, nil
}
