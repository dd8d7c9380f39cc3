// Package bytesize parses and prints byte sizes such as "64MiB".
//
// Accepted units are B, KiB, MiB, GiB (powers of 1024), case-insensitive,
// with or without a space; a bare number is bytes. Decimal SI units (KB, MB)
// are refused rather than guessed at.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is a number of bytes that decodes from text such as "1MiB".
type Size int64

// Units.
const (
	B   Size = 1
	KiB      = 1024 * B
	MiB      = 1024 * KiB
	GiB      = 1024 * MiB
)

var units = []struct {
	suffix string
	mult   Size
}{{"gib", GiB}, {"mib", MiB}, {"kib", KiB}, {"b", B}}

// Parse reads a size like "64MiB", "512 KiB", "1GiB" or "1048576".
func Parse(s string) (Size, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := B
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			mult = u.mult
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: want a whole number with an optional unit B, KiB, MiB or GiB", s)
	}
	if n > uint64(math.MaxInt64/int64(mult)) {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return Size(n) * mult, nil
}

// UnmarshalText implements encoding.TextUnmarshaler (YAML, koanf, env).
func (s *Size) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// String prints the size with the largest unit that divides it exactly.
func (s Size) String() string {
	for _, u := range units {
		if u.mult > B && s != 0 && s%u.mult == 0 {
			return strconv.FormatInt(int64(s/u.mult), 10) + map[Size]string{GiB: "GiB", MiB: "MiB", KiB: "KiB"}[u.mult]
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

// Bytes returns the size as an int64.
func (s Size) Bytes() int64 { return int64(s) }
