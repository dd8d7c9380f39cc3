package push

import (
	"strings"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
)

// The record keys and the config id rule are stored or client-visible
// formats the task store shares (a2a's hashToken of "owner:"+owner, its
// task id rule, its retention): a record written before push became its
// own package must still be found, and an id a2a accepts for a task must
// be accepted for a config.
func TestStoredFormatsMatchTheTaskStore(t *testing.T) {
	t.Parallel()
	if got, want := pushKey("key:a", "t-1"), "e7bc86d24585343815bbb54689f5c531.t-1"; got != want {
		t.Errorf("pushKey = %q, want %q (sha256 of owner:key:a, 32 hex digits)", got, want)
	}
	if defaultRetention != 7*24*time.Hour || maxIDLen != 128 {
		t.Errorf("defaultRetention %v, maxIDLen %d: want a2a's 168h and 128", defaultRetention, maxIDLen)
	}
	p := &Service{}
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"a-Z_0=9", true},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
		{"a.b", false},
		{"a b", false},
	} {
		err := p.Check(&a2av1.PushConfig{ID: tc.id, URL: "https://example.com/hook"})
		if (err == nil) != tc.ok {
			t.Errorf("Check(id %q) = %v, want ok=%v", tc.id, err, tc.ok)
		}
	}
}
