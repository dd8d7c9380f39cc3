package host

import (
	"encoding/json"
	"fmt"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// setupIdentity builds the host's signer from its keys (identity.key_file):
// the JWS header's jku names the JWKS under the public URL. No keys: no
// signer, nothing is signed.
func (h *Host) setupIdentity(keys []*identity.PrivateKey) error {
	s, err := newSigner(keys, h.publicURL())
	if err != nil {
		return fmt.Errorf("config identity.key_file: %w", err)
	}
	if s == nil {
		return nil
	}
	h.signer = s
	for _, k := range s.Keys() {
		h.log.Info("identity: signing with key", "kid", k.KeyID(), "alg", k.Alg().JOSE())
	}
	return nil
}

// jwks is the JWKS document served at /.well-known/jwks.json; nil without
// a signer.
func (h *Host) jwks() []byte {
	if h.signer == nil {
		return nil
	}
	b, err := json.Marshal(h.signer.JWKS())
	if err != nil {
		return nil
	}
	return b
}
