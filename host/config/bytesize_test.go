package config

import (
	"testing"
)

func TestParseByteSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    ByteSize
		wantErr bool
	}{
		{"4096", 4096, false},
		{"100B", 100, false},
		{"1KiB", 1024, false},
		{"64MiB", 64 << 20, false},
		{"64 MiB", 64 << 20, false},
		{"1GiB", 1 << 30, false},
		{"2TiB", 2 << 40, false},
		{"1.5MiB", 3 << 19, false},
		{"0", 0, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"64MB", 0, true},
		{"64mib", 0, true},
		{"-1", 0, true},
		{"+1", 0, true},
		{"1e3", 0, true},
		{"0x10", 0, true},
		{"NaN", 0, true},
		{"Inf", 0, true},
		{"0.3B", 0, true},
		{"18446744073709551615", 1<<64 - 1, false},
		{"18446744073709551616", 0, true},
		{"16777216TiB", 0, true},
		{"99999999999999999999GiB", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseByteSize(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseByteSize(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseByteSize(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestByteSizeString(t *testing.T) {
	t.Parallel()
	tests := map[ByteSize]string{0: "0B", 100: "100B", 1024: "1KiB", 1536 * KiB: "1536KiB", 64 * MiB: "64MiB", GiB: "1GiB", 3 * TiB: "3TiB"}
	for in, want := range tests {
		if got := in.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint64(in), got, want)
		}
		back, err := ParseByteSize(want)
		if err != nil || back != in {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", want, back, err, uint64(in))
		}
	}
}

func TestByteSizeText(t *testing.T) {
	t.Parallel()
	var b ByteSize
	if err := b.UnmarshalText([]byte("256MiB")); err != nil || b != 256*MiB {
		t.Fatalf("UnmarshalText(256MiB) = %d, %v", b, err)
	}
	if err := b.UnmarshalText([]byte("lots")); err == nil {
		t.Fatal("UnmarshalText(lots) succeeded")
	}
	if txt, _ := b.MarshalText(); string(txt) != "256MiB" {
		t.Errorf("MarshalText = %q", txt)
	}
}
