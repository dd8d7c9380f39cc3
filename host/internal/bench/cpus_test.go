package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCPUSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		allowed    []int
		host, load []int
		ok         bool
	}{
		{allowed: []int{0, 1}},
		{allowed: []int{0}},
		{allowed: []int{0, 1, 2}, host: []int{0, 1}, load: []int{2}, ok: true},
		{allowed: []int{2, 3, 6, 7}, host: []int{2, 3}, load: []int{6, 7}, ok: true},
	} {
		host, load, ok := cpuSplit(tc.allowed, 2)
		if diff := cmp.Diff([]any{tc.host, tc.load, tc.ok}, []any{host, load, ok}); diff != "" {
			t.Errorf("cpuSplit(%v, 2) (-want +got):\n%s", tc.allowed, diff)
		}
	}
}

func TestCPUList(t *testing.T) {
	t.Parallel()
	for cpus, want := range map[string][]int{"0": {0}, "0-1": {0, 1}, "0,2": {0, 2}, "0-2,5,7-8": {0, 1, 2, 5, 7, 8}} {
		if got := cpuList(want); got != cpus {
			t.Errorf("cpuList(%v) = %q, want %q", want, got, cpus)
		}
	}
}
