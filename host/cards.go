package host

import (
	"log/slog"
	"net"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// publicBase is the base URL published in Agent Cards: public_url, else the
// scheme http.tls decides plus the address the host listens on (addr, the
// bound one; "" before binding: cfg.Listen).
func publicBase(cfg config.Config, addr net.Addr) string {
	if cfg.PublicURL != "" {
		return strings.TrimRight(cfg.PublicURL, "/")
	}
	scheme := "http://"
	if cfg.HTTP.TLSEnabled() {
		scheme = "https://"
	}
	if addr != nil {
		return scheme + addr.String()
	}
	return scheme + cfg.Listen
}

// newCardService builds the Agent Cards of a host with cfg: what serve
// publishes and what `skillhost card` prints come from here alone, so they
// cannot drift apart. keys says whether HTTP requires API keys (the card
// describes what HTTP enforces; without keys there is nothing extended to
// protect, so no extended card is advertised, as A2A v1.0 §13.3 asks).
func newCardService(cfg config.Config, version, base string, keys bool, snapshot func() *plugin.Snapshot,
	signer *identity.Signer, log *slog.Logger) *a2a.CardService {
	return a2a.NewCardService(a2a.CardConfig{
		BaseURL:    base,
		Version:    version,
		Stdio:      cfg.Stdio,
		GRPC:       grpcPublicAddr(cfg),
		APIKeyAuth: keys,
		BearerAuth: keys,
		Push:       true,
	}, snapshot, a2a.CardServiceOptions{Logger: log, Signer: signer, ExtendedCard: keys})
}

// newSigner builds the host's signer from its keys (identity.key_file):
// the JWS header's jku names the JWKS under base. No keys: nil, nothing is
// signed.
func newSigner(keys []*identity.PrivateKey, base string) (*identity.Signer, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	return identity.NewSigner(keys, base+identity.JWKSPath)
}
