package auth_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/internal/auth"
)

// A client's request id is kept when it is short printable ASCII; any other
// gets a new one of the host's own.
func TestRequestID(t *testing.T) {
	t.Parallel()
	made := regexp.MustCompile(`^req_[0-9a-f]{24}$`)
	for _, tc := range []struct {
		name, client string
		kept         bool
	}{
		{"client's", "trace-42/abc", true},
		{"longest", strings.Repeat("x", auth.MaxRequestIDBytes), true},
		{"none", "", false},
		{"too long", strings.Repeat("x", auth.MaxRequestIDBytes+1), false},
		{"space", "a b", false},
		{"control", "a\nb", false},
		{"non-ASCII", "idé", false},
	} {
		got := auth.RequestID(tc.client)
		switch {
		case tc.kept && got != tc.client:
			t.Errorf("%s: RequestID(%q) = %q, want it kept", tc.name, tc.client, got)
		case !tc.kept && !made.MatchString(got):
			t.Errorf("%s: RequestID(%q) = %q, want a new req_ id", tc.name, tc.client, got)
		}
	}
	if a, b := auth.RequestID(""), auth.RequestID(""); a == b {
		t.Errorf("two new request ids are both %q", a)
	}
}
