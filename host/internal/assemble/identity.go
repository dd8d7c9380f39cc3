package assemble

import (
	"context"
	"encoding/json"
	"fmt"
)

// provisionIdentity reads the host's signing keys (identity.key_file) and
// builds its signer: the JWS header's jku names the JWKS under the public
// URL. No keys: no signer, nothing is signed.
func (h *Root) provisionIdentity(context.Context) error {
	keys, err := Keys(h.cfg.Identity, h.log)
	if err != nil {
		return err
	}
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
func (h *Root) jwks() []byte {
	if h.signer == nil {
		return nil
	}
	b, err := json.Marshal(h.signer.JWKS())
	if err != nil {
		return nil
	}
	return b
}
