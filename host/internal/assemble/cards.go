package assemble

import (
	"context"
	"net"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/identity"
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

// provisionCards builds the Agent Cards: what serve publishes and what
// `skillhost card` prints are this component's, so they cannot drift apart.
// They follow the plugin set (hot reload). With API keys the card
// describes what HTTP enforces; without keys there is nothing extended to
// protect, so no extended card is advertised, as A2A v1.0 §13.3 asks.
func (h *Root) provisionCards(context.Context) error {
	keys := h.keys.Len() > 0
	h.cards = agentcard.NewService(agentcard.Config{
		BaseURL:    h.publicURL(),
		Version:    h.version,
		Stdio:      h.cfg.Stdio,
		GRPC:       grpcPublicAddr(h.cfg),
		APIKeyAuth: keys,
		BearerAuth: keys,
		Push:       true,
	}, h.Registry.Snapshot, agentcard.Options{Logger: h.log, Signer: h.signer, ExtendedCard: keys})
	h.Registry.OnChange(h.cards.Update)
	return nil
}

// Card renders the host's Agent Card, or with agent set that plugin's, as
// GET /.well-known/agent-card.json serves it (Serve, Card).
func (h *Root) Card(ctx context.Context, agent string) ([]byte, error) {
	if agent != "" {
		card, _, err := h.cards.AgentCard(ctx, agent)
		return card, err
	}
	card, _, err := h.cards.Card(ctx)
	return card, err
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
