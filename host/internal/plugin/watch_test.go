package plugin

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// TestBurstWait: the rescan waits for the debounce after the last event,
// but never past maxReloadDelay after the burst's first event.
func TestBurstWait(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	b := &burst{quiet: 250 * time.Millisecond, limit: 2 * time.Second}
	steps := []struct {
		at   time.Time
		fire bool // the timer fired (rescan) before this event
		want time.Duration
	}{
		{ms(0), false, 250 * time.Millisecond},
		{ms(30), false, 250 * time.Millisecond},
		{ms(1800), false, 200 * time.Millisecond}, // 2s after the first event
		{ms(1990), false, 10 * time.Millisecond},
		{ms(2500), false, 0},                     // already due: rescan now
		{ms(2600), true, 250 * time.Millisecond}, // a new burst
		{ms(4500), false, 100 * time.Millisecond},
	}
	for i, st := range steps {
		if st.fire {
			b.rescanned()
		}
		if got := b.event(st.at); got != st.want {
			t.Errorf("step %d (%v after start): wait %v, want %v", i, st.at.Sub(t0), got, st.want)
		}
	}
}

// TestWatchReloadsDuringEndlessEvents: a file written every 30 ms, for as
// long as it takes, must not starve hot reload (with a 1 s debounce the old
// watcher never rescanned while the writes went on). A plugin added at the
// start of the burst must load while the writes continue.
func TestWatchReloadsDuringEndlessEvents(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "first"}.write(t, root)
	r := newTestRegistry(t, config.Policy{})
	r.debounce = time.Second
	changed := make(chan *Snapshot, 16)
	r.OnChange(func(s *Snapshot) { changed <- s })
	watching(t, r, root)
	<-changed // the initial scan loaded "first": the watcher is running

	stop := make(chan struct{})
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		tick := time.NewTicker(30 * time.Millisecond)
		defer tick.Stop()
		noise := filepath.Join(root, "noise.log")
		for i := 0; ; i++ {
			if err := os.WriteFile(noise, []byte(strconv.Itoa(i)), 0o644); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	staged := pluginSpec{name: "second"}.stage(t, root)
	if err := os.Rename(staged, filepath.Join(root, "second")); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for loaded := false; !loaded; {
		select {
		case s := <-changed:
			_, loaded = s.Plugin("second")
		case <-writing:
			t.Fatal("the writer stopped")
		case <-deadline:
			t.Fatal("no reload within 30 s while a file was written every 30 ms")
		}
	}
	close(stop)
	<-writing
}
