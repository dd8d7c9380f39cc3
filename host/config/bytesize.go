package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes. In YAML and config it is written as a plain
// byte count ("1048576") or with a binary unit: "512KiB", "64MiB", "1GiB"
// (B, KiB, MiB, GiB, TiB; the decimal forms KB, MB, GB are refused to avoid
// ambiguity).
type ByteSize uint64

// Binary size units.
const (
	KiB ByteSize = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
)

var byteUnits = []struct {
	suffix string
	mult   ByteSize
}{
	{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}, {"B", 1},
}

// errByteSize is the message every malformed size gets.
var errByteSize = errors.New(`must be a byte count or a size like 512KiB, 64MiB, 1GiB`)

// ParseByteSize parses "64MiB", "512 KiB", "1GiB", "100B" or "4096".
// Fractions ("1.5MiB") are allowed when the result is a whole number of bytes.
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errByteSize
	}
	num, mult := s, ByteSize(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	if num == "" || strings.ContainsAny(num, "+-eEx_") {
		return 0, fmt.Errorf("%q: %w", s, errByteSize)
	}
	if n, err := strconv.ParseUint(num, 10, 64); err == nil {
		if n > math.MaxUint64/uint64(mult) {
			return 0, fmt.Errorf("%q: too large", s)
		}
		return ByteSize(n) * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q: %w", s, errByteSize)
	}
	v := f * float64(mult)
	if v >= math.MaxUint64 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%q: not a whole number of bytes", s)
	}
	return ByteSize(v), nil
}

// String renders the size with the largest unit that divides it exactly,
// e.g. "64MiB", "1536KiB", "100B".
func (b ByteSize) String() string {
	if b == 0 {
		return "0B"
	}
	for _, u := range byteUnits {
		if b%u.mult == 0 {
			return strconv.FormatUint(uint64(b/u.mult), 10) + u.suffix
		}
	}
	return strconv.FormatUint(uint64(b), 10) + "B"
}

// UnmarshalText implements encoding.TextUnmarshaler (config files, koanf).
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }
