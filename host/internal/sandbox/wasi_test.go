package sandbox_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// TestWASIExposesNothingUnlessGranted checks the guest's WASI view: no
// environment (even with one set in the host), only its name as argument,
// and no preopened directory unless a mount is given.
func TestWASIExposesNothingUnlessGranted(t *testing.T) {
	t.Setenv("SKILLHOST_SECRET", "hunter2") // not parallel: Setenv
	rt := mustRuntime(t)
	tests := []struct {
		name   string
		mounts []sandbox.Mount
		want   []byte // env count, arg count, fd_prestat_get(3) errno
	}{
		{"no grants", nil, []byte{0, 1, 8}},
		{"one mount", []sandbox.Mount{{GuestPath: "/data", FS: fstest.MapFS{"a.txt": {Data: []byte("hi")}}}}, []byte{0, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := rt.Load(context.Background(), sandbox.ModuleSpec{Name: "probe", Wasm: mustFixture(t, "wasi_probe"), Mounts: tt.mounts})
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Call(context.Background(), "probe", nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.Output); diff != "" {
				t.Errorf("WASI view (-want +got):\n%s", diff)
			}
		})
	}
}
