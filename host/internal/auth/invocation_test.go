package auth

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The invocation is one value on ctx: the transport's principal stays
// whatever a later Invoke says, and Attached reports only With.
func TestInvocation(t *testing.T) {
	t.Parallel()
	key := keyPrincipal("ops", nil, Limits{})
	tests := []struct {
		name     string
		ctx      func() context.Context
		want     Invocation
		attached bool
	}{
		{"nothing attached", context.Background, Invocation{}, false},
		{"principal only", func() context.Context { return With(context.Background(), key) }, Invocation{Principal: key}, true},
		{"invoked after the transport", func() context.Context {
			return Invoke(With(context.Background(), key), Invocation{SessionID: "s1", RequestID: "r1", Method: "m"})
		}, Invocation{Principal: key, SessionID: "s1", RequestID: "r1", Method: "m"}, true},
		{"an invocation cannot change whom the call acts for", func() context.Context {
			return Invoke(With(context.Background(), key), Invocation{Principal: Local("stdio"), SessionID: "s1"})
		}, Invocation{Principal: key, SessionID: "s1"}, true},
		{"invoked without a principal", func() context.Context {
			return Invoke(context.Background(), Invocation{Principal: Local("stdio"), RequestID: "r1"})
		}, Invocation{RequestID: "r1"}, false},
		{"a nested invocation replaces the call's, keeps the principal", func() context.Context {
			ctx := Invoke(With(context.Background(), key), Invocation{SessionID: "s1", RequestID: "r1", Method: "m"})
			return Invoke(ctx, Invocation{SessionID: "s2", RequestID: "r2", Method: "m"})
		}, Invocation{Principal: key, SessionID: "s2", RequestID: "r2", Method: "m"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := tt.ctx()
			got := InvocationFrom(ctx)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(Principal{})); diff != "" {
				t.Errorf("InvocationFrom (-want +got):\n%s", diff)
			}
			if From(ctx).KeyID() != tt.want.Principal.KeyID() || Attached(ctx) != tt.attached {
				t.Errorf("From = %v, Attached = %v; want %v, %v", From(ctx), Attached(ctx), tt.want.Principal, tt.attached)
			}
		})
	}
}
