package testutil

import (
	"context"
	"testing"
	"time"
)

// Compiler is a plugin registry that compiles in the background.
type Compiler interface {
	WaitCompiled(ctx context.Context) error
}

// MustCompiled waits (up to three minutes) until reg has no plugin on its
// first compile. A harness calls it after loading plugins: on a loaded
// machine a first call could otherwise outwait its deadline behind the
// compile and fail plugin_loading, which the test did not mean to check.
func MustCompiled(t testing.TB, reg Compiler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := reg.WaitCompiled(ctx); err != nil {
		t.Fatalf("plugins still compiling after 3 minutes: %v", err)
	}
}
