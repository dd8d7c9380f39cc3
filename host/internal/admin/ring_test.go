package admin_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/admin"
)

// The ring keeps the newest failures, newest first, counts every one, and
// cuts long messages on a rune boundary.
func TestRing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		size, add int
		limit     int
		want      []string
	}{
		{"filling", 4, 2, 0, []string{"r1", "r0"}},
		{"full", 3, 3, 0, []string{"r2", "r1", "r0"}},
		{"wrapped", 3, 7, 0, []string{"r6", "r5", "r4"}},
		{"limited", 3, 7, 2, []string{"r6", "r5"}},
		{"empty", 3, 0, 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := admin.NewRing(tt.size)
			for i := range tt.add {
				r.Add(admin.Failure{Reason: fmt.Sprintf("r%d", i)})
			}
			got := []string{}
			for _, f := range r.List(tt.limit) {
				got = append(got, f.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			if r.Total() != uint64(tt.add) || r.Size() != tt.size {
				t.Errorf("Total %d, Size %d", r.Total(), r.Size())
			}
		})
	}
	r := admin.NewRing(1)
	r.Add(admin.Failure{Message: strings.Repeat("é", 400)})
	msg := r.List(0)[0].Message
	if len(msg) > 300 || !strings.HasSuffix(msg, "…") || !strings.HasPrefix(msg, "éé") || strings.ContainsRune(msg, '\uFFFD') {
		t.Errorf("cut message = %q (%d bytes)", msg, len(msg))
	}
}
