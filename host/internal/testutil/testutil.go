// Package testutil holds the test helpers several packages share: waiting
// for a condition with a deadline instead of sleeping, checking a fault's
// kind and reason, waiting for goroutines to wind down, and a log buffer
// safe for concurrent writes. Only tests import it.
//
//	testutil.Eventually(t, 10*time.Second, "the instance to be freed", func() bool {
//		return mod.Stats().InstancesBusy == 0
//	})
//	fe := testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
package testutil

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

// pollEvery is how often Eventually checks its condition.
const pollEvery = 10 * time.Millisecond

// Eventually checks cond until it holds and fails the test (naming what it
// waited for) when it still does not after within. Give within generously:
// the machine may be loaded; a passing test returns as soon as cond holds.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("gave up after %v waiting for %s", within, what)
	}
}

// Poll checks cond until it holds (true) or within has passed (false), for
// a caller that reports the failure itself.
func Poll(within time.Duration, cond func() bool) bool { return PollEvery(within, pollEvery, cond) }

// PollEvery is Poll checking every every: for a condition that is costly to
// check (a cluster's status) or only changes that often (a token bucket).
func PollEvery(within, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// MustFault fails the test unless err is a *fault.Error of kind k with the
// given reason, and returns it.
func MustFault(t testing.TB, err error, k fault.Kind, reason string) *fault.Error {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *fault.Error", err, err)
	}
	if fe.Kind != k || fe.Reason != reason {
		t.Fatalf("fault = %v/%q (%v), want %v/%q", fe.Kind, fe.Reason, fe, k, reason)
	}
	return fe
}

// WaitGoroutines waits until at most baseline goroutines run (work that
// ended may take a moment to unwind) and fails with every goroutine's stack
// when they do not within 10 seconds.
func WaitGoroutines(t testing.TB, baseline int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, baseline %d\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
		}
		<-tick.C
	}
}

// SettledGoroutines waits until the goroutine count has stopped changing
// (the same for 5 checks in a row, at most 10 seconds) and returns it: a
// baseline taken once work that just ended has unwound.
func SettledGoroutines() int {
	n, same := runtime.NumGoroutine(), 0
	Poll(10*time.Second, func() bool {
		m := runtime.NumGoroutine()
		if m == n {
			same++
		} else {
			n, same = m, 0
		}
		return same >= 5
	})
	return n
}
