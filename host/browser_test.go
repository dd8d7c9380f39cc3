package host_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// mustBrowser starts headless Chromium (Debian's chromium, or
// $SKILLHOST_CHROMIUM) with a fresh profile and returns a tab context that
// ends with the test. Without a browser the test is skipped, except in CI
// (CI=true), where a missing browser is a failure: .ci/run installs it.
func mustBrowser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("SKILLHOST_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found: CI must run the dashboard test (apt-get install -y chromium)")
		}
		t.Skip("chromium not found (apt-get install -y chromium); the dashboard test needs it")
	}
	// A browser that fails to start (it exits before it serves DevTools,
	// which a loaded machine sometimes sees) is started again, twice at
	// most, each time with a fresh profile: it is the test's tool, not what
	// the test checks.
	var errs []error
	for range 3 {
		ctx, err := startBrowser(t, path)
		if err == nil {
			return ctx
		}
		errs = append(errs, err)
	}
	t.Fatalf("starting %s: %v", path, errors.Join(errs...))
	return nil
}

// startBrowser starts a headless browser at path; its tab lives until the
// test ends.
func startBrowser(t *testing.T, path string) (context.Context, error) {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	stop := func() { cancelTime(); cancelTab(); cancelAlloc() }
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		stop()
		return nil, err
	}
	t.Cleanup(stop)
	return ctx, nil
}
