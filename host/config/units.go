package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/v2"
)

// unit says what kind of quantity a key holds.
type unit uint8

const (
	durationUnit unit = iota + 1
	sizeUnit
)

var (
	durationType = reflect.TypeFor[time.Duration]()
	sizeType     = reflect.TypeFor[ByteSize]()
)

// unitKeys maps every key of Config that holds a duration or a size.
var unitKeys = unitKeysOf(reflect.TypeFor[Config]())

// unitKeysOf maps every key of the struct type t that holds a duration or a
// size.
func unitKeysOf(t reflect.Type) map[string]unit {
	keys := map[string]unit{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("koanf")
			if tag == "" || !f.IsExported() {
				continue
			}
			key := prefix + tag
			switch {
			case f.Type == durationType:
				keys[key] = durationUnit
			case f.Type == sizeType:
				keys[key] = sizeUnit
			case f.Type.Kind() == reflect.Struct:
				walk(key+".", f.Type)
			}
		}
	}
	walk("", t)
	return keys
}

// checkUnits refuses, in one layer, every duration or size written without
// a unit: YAML's `read_timeout: 10` would otherwise be 10 nanoseconds and a
// bare `body_limit: 1` one byte. Zero needs no unit. name renders a key as
// the layer spells it (an environment variable, a flag).
func checkUnits(k *koanf.Koanf, where string, name func(string) string) error {
	return checkUnitsIn(k, unitKeys, where, name)
}

// checkUnitsIn is checkUnits for the keys of units (those of a list item).
func checkUnitsIn(k *koanf.Koanf, units map[string]unit, where string, name func(string) string) error {
	var bad []string
	for _, key := range k.Keys() {
		u, ok := units[key]
		if !ok {
			continue
		}
		raw, ok := unitless(k.Get(key))
		if !ok {
			continue
		}
		label := key
		if spelled := name(key); spelled != key {
			label = spelled + " (" + key + ")"
		}
		if u == durationUnit {
			bad = append(bad, fmt.Sprintf("%s: %s has no unit (it would mean %s nanoseconds); write a duration such as %q or %q",
				label, raw, raw, raw+"s", raw+"ms"))
		} else {
			bad = append(bad, fmt.Sprintf("%s: %s has no unit; write a size such as %q, %q or %q",
				label, raw, raw+"B", raw+"KiB", raw+"MiB"))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("config %s: %s", where, strings.Join(bad, "; "))
}

// unitless reports a value that is a bare non-zero number, rendered as
// written.
func unitless(v any) (string, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = strings.TrimSpace(x)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		s = fmt.Sprint(x)
	default: // time.Duration and ByteSize from typed flags, lists, maps
		return "", false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f == 0 {
		return "", false
	}
	return s, true
}
