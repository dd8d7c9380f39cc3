package devkit_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillhost/skillhost/host/devkit"
)

// builtFirstParty builds plugins/<name> into a temp copy of its folder (the
// source tree is not written) once per test run. (Validating and testing
// every first-party plugin is cmd/skillhost's TestFirstPartyPlugins: the
// binary compiles modules in seconds where a -race test binary takes
// minutes.)
func builtFirstParty(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "plugins", name)
	return sharedBuild(t, "plugin/"+name, func() (string, error) {
		dst := filepath.Join(shared.root, "plugins", name)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return "", err
		}
		data, err := os.ReadFile(filepath.Join(src, "plugin.yaml"))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dst, "plugin.yaml"), data, 0o644); err != nil {
			return "", err
		}
		// Build from the source folder, writing the module into the copy.
		_, err = devkit.Build(context.Background(), src, devkit.BuildOptions{Out: filepath.Join(dst, name+".wasm")})
		return dst, err
	})
}
