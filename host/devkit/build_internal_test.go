package devkit

import (
	"strings"
	"testing"
)

// TestCappedBufferBoundsToolOutput: a toolchain spewing megabytes of errors
// is kept to maxToolOutput bytes plus a count of the rest.
func TestCappedBufferBoundsToolOutput(t *testing.T) {
	t.Parallel()
	b := cappedBuffer{max: 100}
	chunk := []byte(strings.Repeat("x", 64))
	for range 1000 {
		if n, err := b.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v; want the whole chunk accepted", n, err)
		}
	}
	if b.Len() != 100 {
		t.Errorf("kept %d bytes, want 100", b.Len())
	}
	if !strings.HasSuffix(b.String(), "(63900 more bytes of output)") {
		t.Errorf("String() = …%q", b.String()[90:])
	}
}
