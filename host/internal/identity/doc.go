// Package identity holds skillhost's signing keys and the JOSE pieces built
// on them: key files, JWK and JWKS, JWS signatures with a detached payload,
// and the JSON Canonicalization Scheme (RFC 8785) that payloads are signed in.
//
// Two algorithms: Ed25519 (JOSE "EdDSA", crypto/ed25519) and ML-DSA-65
// (FIPS 204; JOSE "ML-DSA-65" and JWK key type "AKP" per RFC 9964, through
// github.com/cloudflare/circl). go-jose/v4 builds and parses every JWS; it
// knows ML-DSA only on Go 1.27 (crypto/mldsa), so both algorithms reach it
// as opaque signers and verifiers implemented here.
//
// Key files are PEM: the private key as PKCS #8 ("PRIVATE KEY"; RFC 8410
// for Ed25519, RFC 9881's seed form for ML-DSA-65), the public key as
// SubjectPublicKeyInfo ("PUBLIC KEY"). OpenSSL 3.5 reads and writes both.
// A key's id (kid) is its RFC 7638 JWK thumbprint, so the same key has the
// same id everywhere.
//
//	key, _ := identity.Generate(identity.Ed25519)
//	signer, _ := identity.NewSigner([]*identity.PrivateKey{key}, "https://agents.example/.well-known/jwks.json")
//	sigs, _ := signer.SignDetached(payload)                      // one JWS per key
//	pub, err := identity.NewKeySet(key.Public()).Verify(payload, sigs[0])
package identity
