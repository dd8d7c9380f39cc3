package bytesize

import "testing"

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Size
		wantErr bool
	}{
		{"64MiB", 64 * MiB, false},
		{"512 KiB", 512 * KiB, false},
		{"1gib", GiB, false},
		{"1048576", MiB, false},
		{"10B", 10, false},
		{"", 0, true},
		{"1MB", 0, true},
		{"-1MiB", 0, true},
		{"1.5MiB", 0, true},
		{"99999999999999GiB", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("Parse(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	for in, want := range map[Size]string{64 * MiB: "64MiB", GiB: "1GiB", 1500: "1500B", 3 * KiB: "3KiB", 0: "0B"} {
		if got := in.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", in, got, want)
		}
	}
}
