package auth_test

import (
	"testing"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// The host-wide cap of running calls holds for every principal, local ones
// included, while a key is also held to its own share: a key at its share
// leaves room for the other key.
func TestGuardHostWideRunningCalls(t *testing.T) {
	t.Parallel()
	ks, err := auth.NewKeySet([]auth.KeySpec{
		{ID: "a", SHA256: auth.Digest("a"), Scopes: []string{"*"}},
		{ID: "b", SHA256: auth.Digest("b"), Scopes: []string{"*"}},
	}, auth.Limits{MaxConcurrentCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ks.Principal("a")
	b, _ := ks.Principal("b")
	g := auth.NewGuard(nil, 3)
	admit := func(p auth.Principal) func() {
		t.Helper()
		release, err := g.Admit(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return release
	}
	releaseA := admit(a)
	admit(a)
	_, err = g.Admit(a)
	fe := testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonRateLimited)
	if fe.Data["limit"] != "auth.limits.max_concurrent_calls" {
		t.Errorf("a's refusal names %v, want auth.limits.max_concurrent_calls", fe.Data["limit"])
	}
	admit(b) // a sits at its share; b is served
	_, err = g.Admit(b)
	fe = testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonPoolSaturated)
	if fe.Data["limit"] != "rpc.max_running_calls" {
		t.Errorf("host-wide refusal names %v, want rpc.max_running_calls", fe.Data["limit"])
	}
	_, err = g.Admit(auth.Local("stdio"))
	wantFault(t, err, fault.ResourceExhausted, fault.ReasonPoolSaturated)
	releaseA()
	admit(b)
	if st := g.Running().Stats(); st.InUse != 3 || st.RefusedFull != 2 || st.RefusedShare != 1 {
		t.Errorf("stats %+v; want 3 in use, 2 host-wide and 1 share refusals", st)
	}
}
