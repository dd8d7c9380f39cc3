package host_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
)

// A port in use fails New before the state store opens and before any
// plugin compiles: the data folder is never created and no plugin is
// loaded.
func TestNewFailsAtOnceOnPortClash(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	cfg := config.Defaults()
	cfg.Listen = taken.Addr().String()
	cfg.Plugins, cfg.Data = dir, filepath.Join(t.TempDir(), "data")
	logs := &logBuffer{}
	h, err := host.New(context.Background(), cfg, host.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	if err == nil {
		_ = h.Close(context.Background())
		t.Fatal("host.New succeeded on a port in use")
	}
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "listen "+cfg.Listen) || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("error = %v, want listen %s: address already in use, with the way out (--listen)", err, cfg.Listen)
	}
	if _, serr := os.Stat(cfg.Data); !os.IsNotExist(serr) {
		t.Errorf("data folder %s exists (%v): the store opened before the listener was bound", cfg.Data, serr)
	}
	if l := logs.lines("plugin"); len(l) != 0 {
		t.Errorf("plugins were loaded before the port clash was found:\n%s", strings.Join(l, "\n"))
	}
}

// Listening on every interface without public_url is served, with a
// warning naming the unreachable URL the card would publish.
func TestWildcardListenWarns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, listen, publicURL string
		warn                    bool
	}{
		{"IPv4 wildcard", "0.0.0.0:0", "", true},
		{"IPv6 wildcard", "[::]:0", "", true},
		{"wildcard with public_url", "0.0.0.0:0", "http://skills.example:8080", false},
		{"loopback", "127.0.0.1:0", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, logs := mustHostWith(t, t.TempDir(), func(c *config.Config) {
				c.Listen, c.PublicURL = tt.listen, tt.publicURL
				c.HTTP.AllowInsecureRemote = true
			})
			got := logs.lines(`"level":"WARN"`, "listening on every interface without public_url")
			if tt.warn && (len(got) != 1 || !strings.Contains(got[0], "http://") || !strings.Contains(got[0], "set public_url")) {
				t.Errorf("want one warning naming the published URL, got %q", got)
			}
			if !tt.warn && len(got) != 0 {
				t.Errorf("unexpected warning %q", got)
			}
		})
	}
}
