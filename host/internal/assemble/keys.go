package assemble

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// Trust reads the trusted publisher keys of trust.publishers into the
// registry's signature policy. A publisher is named after its key file,
// without directory and the extensions .pub, .pem and .key (alice.key.pub:
// alice).
func Trust(t config.Trust) (plugin.Trust, error) {
	out := plugin.Trust{Require: t.RequireSignatures}
	for i, file := range t.Publishers {
		key, err := identity.LoadPublicFile(file)
		if err != nil {
			return plugin.Trust{}, fmt.Errorf("config trust.publishers[%d]: %w", i, err)
		}
		name := filepath.Base(file)
		for _, ext := range []string{".pub", ".pem", ".key"} {
			name = strings.TrimSuffix(name, ext)
		}
		out.Publishers = append(out.Publishers, plugin.Publisher{Name: name, Key: key})
	}
	return out, nil
}

// Keys reads the host's signing keys (identity.key_file), warning on log
// about a key file others may read. None configured: nil.
func Keys(id config.Identity, log *slog.Logger) ([]*identity.PrivateKey, error) {
	var keys []*identity.PrivateKey
	for i, file := range id.KeyFile {
		key, loose, err := identity.LoadPrivateFile(file)
		if err != nil {
			return nil, fmt.Errorf("config identity.key_file[%d]: %w", i, err)
		}
		if loose && log != nil {
			log.Warn("identity: the private key file is readable by other users; chmod 600 it", "file", file)
		}
		keys = append(keys, key)
	}
	return keys, nil
}
