package config_test

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"github.com/skillhost/skillhost/host/config"
)

// The documents every configuration key is checked against. configTable is
// the one file with the configuration tables (every Markdown table whose
// first column is "key" and that has a "default" column).
const (
	configTable  = "../../docs/reference/config.md"
	sampleConfig = "../../examples/config/skillhost.yaml"
)

// TestConfigDocumented: every key of the configuration (the koanf tags of
// config.Config) is declared once, with its default in Defaults, and both
// documents follow it — the config table has a row for each key whose
// default is Defaults' value written the way the table writes it, names no
// key that does not exist, and the sample YAML sets every key to its
// default.
func TestConfigDocumented(t *testing.T) {
	t.Parallel()
	defaults := leafKeys(reflect.ValueOf(config.Defaults()), "")
	t.Run("table", func(t *testing.T) {
		t.Parallel()
		rows := mustConfigRows(t, configTable)
		for _, key := range sortedKeys(defaults) {
			row, ok := rows[key]
			if !ok {
				t.Errorf("%s: key %s has no row; add `| `%s` | | %s | … |`", configTable, key, key, formatDefault(defaults[key]))
				continue
			}
			if want := formatDefault(defaults[key]); row.def != want {
				t.Errorf("%s:%d: %s: the table's default is %q, Defaults() has %q", configTable, row.line, key, row.def, want)
			}
		}
		extra := fileOnlyKeys()
		for _, key := range sortedKeys(rows) {
			if _, ok := defaults[key]; !ok && !extra[key] && !pointer(key, defaults) && !itemKey(key, defaults) {
				t.Errorf("%s:%d: the row of %s names no configuration key", configTable, rows[key].line, key)
			}
		}
	})
	t.Run("sample", func(t *testing.T) {
		t.Parallel()
		cfg, err := config.Load(config.Sources{File: sampleConfig, Environ: []string{}})
		if err != nil {
			t.Fatalf("config.Load(%s): %v", sampleConfig, err)
		}
		if diff := cmp.Diff(config.Defaults(), cfg, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s differs from the defaults (-defaults +sample):\n%s", sampleConfig, diff)
		}
		inFile := koanf.New(".")
		if err := inFile.Load(file.Provider(sampleConfig), yaml.Parser()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sortedKeys(defaults), inFile.Keys()); diff != "" {
			t.Errorf("%s does not name every key (-known +sample):\n%s", sampleConfig, diff)
		}
	})
}

// leafKeys walks v's koanf tags: every field that is not a section (a
// nested struct) is a key, lists included.
func leafKeys(v reflect.Value, prefix string) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		key := prefix + tag
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
			for k, fv := range leafKeys(v.Field(i), key+".") {
				out[k] = fv
			}
			continue
		}
		out[key] = v.Field(i)
	}
	return out
}

// fileOnlyKeys are the keys of the file's plugins.<name> sections (not
// koanf keys: read from the file alone, config.PluginSettings).
func fileOnlyKeys() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[config.PluginSettings]()
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("koanf"); tag != "" && tag != "-" {
			out["plugins.<name>."+tag] = true
		}
	}
	return out
}

// pointer reports whether key is a row like `policy.*` that points to a
// table of its own: every key under the prefix has its row there.
func pointer(key string, keys map[string]reflect.Value) bool {
	prefix, ok := strings.CutSuffix(key, "*")
	if !ok {
		return false
	}
	for k := range keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// itemKey reports whether key is a row like `policy.skill_rates[].per`
// naming a field of a list key's items: the list is a key and its element
// struct has that koanf tag.
func itemKey(key string, keys map[string]reflect.Value) bool {
	list, field, ok := strings.Cut(key, "[].")
	if !ok {
		return false
	}
	v, ok := keys[list]
	if !ok || v.Kind() != reflect.Slice || v.Type().Elem().Kind() != reflect.Struct {
		return false
	}
	elem := v.Type().Elem()
	for i := range elem.NumField() {
		if elem.Field(i).Tag.Get("koanf") == field {
			return true
		}
	}
	return false
}

// formatDefault writes a default the way the table does: durations in
// their largest whole unit (10s, 5m, 720h), sizes with their unit (1MiB),
// zero as 0, empty strings as "" and empty lists as [].
func formatDefault(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		return formatDuration(x)
	case config.ByteSize:
		if x == 0 {
			return "0"
		}
		return x.String()
	case string:
		if x == "" {
			return `""`
		}
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	if v.Kind() == reflect.Slice && v.Len() == 0 {
		return "[]"
	}
	return fmt.Sprint(v.Interface())
}

func formatDuration(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d != 0 && d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.name
		}
	}
	if d == 0 {
		return "0"
	}
	return d.String()
}

// configRow is one key's row: its default (the cell's first code span) and
// where it is.
type configRow struct {
	def  string
	line int
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// mustConfigRows reads every key row of the file's configuration tables;
// a row may name several keys (`a`, `b`), each with the row's default.
func mustConfigRows(t *testing.T, path string) map[string]configRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]configRow{}
	defCol := -1 // the default column of the table being read; -1: not a configuration table
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			defCol = -1
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case cells[0] == "key":
			defCol = slices.Index(cells, "default")
			continue
		case defCol < 0 || strings.HasPrefix(cells[0], "---") || len(cells) <= defCol:
			continue
		}
		def := cells[defCol]
		if m := codeSpan.FindStringSubmatch(def); m != nil {
			def = m[1]
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[0], -1) {
			if prev, dup := rows[m[1]]; dup {
				t.Errorf("%s:%d: %s has a row already (line %d)", path, n, m[1], prev.line)
			}
			rows[m[1]] = configRow{def: def, line: n}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 50 {
		t.Fatalf("%s: %d configuration rows; is it the file with the configuration tables?", path, len(rows))
	}
	return rows
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
