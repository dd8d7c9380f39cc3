package store

import (
	"testing"
	"time"
)

// A fill whose read began before an eviction is not stored: it may have
// read the session just before it was closed.
func TestSessionCacheFillRacesEviction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		evictMid  bool
		status    string
		lease     time.Duration
		wantCache bool
	}{
		{"fill", false, StatusActive, 0, true},
		{"eviction during the read", true, StatusActive, 0, false},
		{"closed sessions are not cached", false, StatusClosed, 0, false},
		{"lease already over", false, StatusActive, time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newSessionCache(tt.lease)
			start, epoch := c.begin()
			if tt.evictMid {
				c.evict("other")
			}
			if tt.lease > 0 { // a read that began longer than a lease ago
				start = start.Add(-2 * tt.lease)
			}
			c.put(Session{ID: "s", Status: tt.status}, start, epoch)
			got, ok := c.get("s")
			if ok != tt.wantCache {
				t.Fatalf("cached = %v, want %v", ok, tt.wantCache)
			}
			if ok && got.ID != "s" {
				t.Errorf("cached %+v", got)
			}
		})
	}
}
