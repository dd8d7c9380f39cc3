package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readAll reads frames until io.EOF, recording bodies and error sentinels.
func readAll(t *testing.T, in string, max int) []string {
	t.Helper()
	br := bufio.NewReaderSize(strings.NewReader(in), 64)
	var got []string
	for range 100 {
		body, err := ReadFrame(br, max)
		switch {
		case errors.Is(err, io.EOF):
			return got
		case errors.Is(err, ErrMalformedHeader):
			got = append(got, "<malformed>")
		case errors.Is(err, ErrFrameTooLarge):
			got = append(got, "<too large>")
		case errors.Is(err, ErrTruncated):
			return append(got, "<truncated>")
		case err != nil:
			t.Fatalf("ReadFrame: %v", err)
		default:
			got = append(got, string(body))
		}
	}
	t.Fatal("ReadFrame loops")
	return nil
}

func TestReadFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"spec form", "2\n{}", []string{"{}"}},
		{"trailing newline", "2\n{}\n3\n[1]\n", []string{"{}", "[1]"}},
		{"crlf", "2\r\n{}\r\n3\r\n[1]\r\n", []string{"{}", "[1]"}},
		{"blank lines between frames", "\n\n2\n{}\n\r\n\n2\n[]", []string{"{}", "[]"}},
		{"body with newlines", "7\n{\n\"a\"\n}\n", []string{"{\n\"a\"\n}"}},
		{"zero length", "0\n\n", []string{""}},
		{"non numeric", "abc\n2\n{}", []string{"<malformed>", "{}"}},
		{"negative", "-5\n2\n{}", []string{"<malformed>", "{}"}},
		{"plus sign", "+2\n{}\n", []string{"<malformed>", "<malformed>"}},
		{"junk at end of input", "+2\n{}", []string{"<malformed>", "<truncated>"}},
		{"overflow", "99999999999999999999\n2\n{}", []string{"<malformed>", "{}"}},
		{"overlong header", strings.Repeat("7", 500) + "\n2\n{}", []string{"<malformed>", "{}"}},
		{"too large skipped exactly", "12\n{\"a\":\"xxx\"}\n2\n{}", []string{"<too large>", "{}"}},
		{"truncated body", "10\n{}", []string{"<truncated>"}},
		{"truncated header", "12", []string{"<truncated>"}},
		{"too large truncated", "100\n{}", []string{"<truncated>"}},
		{"empty", "", nil},
		{"only newlines", "\n\r\n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, readAll(t, tt.in, 8)); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteFrameRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	bodies := []string{`{"jsonrpc":"2.0","result":"é","id":1}`, ``, "{\n}"}
	for _, b := range bodies {
		if err := WriteFrame(&buf, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(buf.String(), "38\n{") { // length counts bytes, not runes
		t.Errorf("frame = %q", buf.String())
	}
	if diff := cmp.Diff(bodies, readAll(t, buf.String(), 1<<10)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{"2\n{}\n", "abc\n2\n{}", "-1\n", "99999999999999999999\n", "5\r\n[1,2]\r\n", "3\n{}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 64
		br := bufio.NewReaderSize(bytes.NewReader(in), 16)
		for i := 0; ; i++ {
			if i > len(in)+1 {
				t.Fatalf("ReadFrame made no progress on %q", in)
			}
			body, err := ReadFrame(br, max)
			if len(body) > max {
				t.Fatalf("body of %d bytes over max", len(body))
			}
			if err != nil && !errors.Is(err, ErrMalformedHeader) && !errors.Is(err, ErrFrameTooLarge) {
				return // EOF, truncated: the stream is over
			}
		}
	})
}
