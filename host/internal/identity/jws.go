package identity

import (
	"errors"
	"fmt"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

// Algorithms are the JWS algorithms a verifier accepts.
var Algorithms = []jose.SignatureAlgorithm{jose.EdDSA, jose.MLDSA65}

// Signature is one JWS with a detached payload in the flattened JSON form
// the A2A Agent Card uses: the base64url protected header and signature.
type Signature struct {
	Protected string `json:"protected"`
	Signature string `json:"signature"`
}

// Compact is the detached compact serialization "<protected>..<signature>".
func (s Signature) Compact() string { return s.Protected + ".." + s.Signature }

// ParseCompact splits a detached compact JWS ("<protected>..<signature>").
func ParseCompact(s string) (Signature, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[1] != "" || parts[0] == "" || parts[2] == "" {
		return Signature{}, errors.New("identity: not a detached compact JWS (<protected>..<signature>)")
	}
	return Signature{Protected: parts[0], Signature: parts[2]}, nil
}

// Header carries the protected header parameters a Signer sets besides
// alg and kid. Empty fields are left out.
type Header struct {
	Type string // "typ"; default "JOSE"
	JKU  string // "jku": where the signer's JWKS is served
	// Extra are further protected parameters (e.g. a key's SPKI).
	Extra map[string]any
}

// Signer signs with one or more keys (hybrid: Ed25519 and ML-DSA-65), one
// signature per key. It is immutable and safe for concurrent use.
type Signer struct {
	keys []*PrivateKey
	jku  string
}

// NewSigner returns a signer over keys, in order; jku (optional) is put in
// every protected header.
func NewSigner(keys []*PrivateKey, jku string) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("identity: a signer needs at least one key")
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.pub.kid] {
			return nil, fmt.Errorf("identity: key %s is listed twice", k.pub.kid)
		}
		seen[k.pub.kid] = true
	}
	return &Signer{keys: append([]*PrivateKey(nil), keys...), jku: jku}, nil
}

// Keys are the signer's public keys, in order.
func (s *Signer) Keys() []*PublicKey {
	out := make([]*PublicKey, len(s.keys))
	for i, k := range s.keys {
		out[i] = k.pub
	}
	return out
}

// KeySet is the signer's public keys as a KeySet.
func (s *Signer) KeySet() *KeySet { return NewKeySet(s.Keys()...) }

// JWKS is the signer's public keys as a JWKS document, in order.
func (s *Signer) JWKS() JWKS {
	doc := JWKS{Keys: make([]JWK, 0, len(s.keys))}
	for _, k := range s.keys {
		doc.Keys = append(doc.Keys, k.pub.JWK())
	}
	return doc
}

// JKU is the JWKS URL put in protected headers ("" if none).
func (s *Signer) JKU() string { return s.jku }

// SignDetached signs payload with every key: protected header
// {alg, kid, typ: "JOSE", jku}. The payload is not part of the result.
func (s *Signer) SignDetached(payload []byte) ([]Signature, error) {
	return s.SignDetachedEach(payload, func(*PublicKey) Header { return Header{JKU: s.jku} })
}

// SignDetachedEach signs payload with every key, under the header that
// header returns for the key (alg and kid are always set).
func (s *Signer) SignDetachedEach(payload []byte, header func(*PublicKey) Header) ([]Signature, error) {
	out := make([]Signature, 0, len(s.keys))
	for _, k := range s.keys {
		jws, err := k.sign(payload, header(k.pub))
		if err != nil {
			return nil, err
		}
		compact, err := jws.DetachedCompactSerialize()
		if err != nil {
			return nil, fmt.Errorf("identity: serialize JWS: %w", err)
		}
		sig, err := ParseCompact(compact)
		if err != nil {
			return nil, err
		}
		out = append(out, sig)
	}
	return out, nil
}

func (h Header) options() *jose.SignerOptions {
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(cmpOr(h.Type, "JOSE")))
	if h.JKU != "" {
		opts = opts.WithHeader("jku", h.JKU)
	}
	for k, v := range h.Extra {
		opts = opts.WithHeader(jose.HeaderKey(k), v)
	}
	return opts
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (k *PrivateKey) sign(payload []byte, h Header) (*jose.JSONWebSignature, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.pub.alg.JOSE(), Key: opaque{k}}, h.options())
	if err != nil {
		return nil, fmt.Errorf("identity: signer: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return nil, fmt.Errorf("identity: sign: %w", err)
	}
	return jws, nil
}

// opaque adapts a PrivateKey to jose.OpaqueSigner (go-jose on Go 1.26
// cannot sign with ML-DSA itself; one path serves both algorithms).
type opaque struct{ k *PrivateKey }

func (o opaque) Public() *jose.JSONWebKey { return &jose.JSONWebKey{KeyID: o.k.pub.kid} }

func (o opaque) Algs() []jose.SignatureAlgorithm {
	return []jose.SignatureAlgorithm{o.k.pub.alg.JOSE()}
}

func (o opaque) SignPayload(payload []byte, alg jose.SignatureAlgorithm) ([]byte, error) {
	if alg != o.k.pub.alg.JOSE() {
		return nil, jose.ErrUnsupportedAlgorithm
	}
	return o.k.Sign(payload)
}

// Verify checks sig over the detached payload against the set's key named
// by the protected header's kid and returns that key. The header must name
// an accepted algorithm (Algorithms) matching the key.
func (s *KeySet) Verify(payload []byte, sig Signature) (*PublicKey, error) {
	jws, err := jose.ParseDetached(sig.Compact(), payload, Algorithms)
	if err != nil {
		return nil, fmt.Errorf("identity: parse JWS: %w", err)
	}
	h := jws.Signatures[0].Protected
	if h.KeyID == "" {
		return nil, errors.New("identity: JWS header has no kid")
	}
	key, ok := s.Key(h.KeyID)
	if !ok {
		return nil, &UnknownKeyError{KeyID: h.KeyID}
	}
	if err := jws.DetachedVerify(payload, key); err != nil {
		return nil, fmt.Errorf("identity: signature by %s does not verify", h.KeyID)
	}
	return key, nil
}

// UnknownKeyError is a signature by a key the verifier does not hold.
type UnknownKeyError struct{ KeyID string }

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("identity: signed by key %s, which is not trusted here", e.KeyID)
}

// HeaderOf decodes the protected header of sig without verifying anything.
func HeaderOf(sig Signature) (jose.Header, error) {
	jws, err := jose.ParseDetached(sig.Compact(), []byte{}, Algorithms)
	if err != nil {
		return jose.Header{}, fmt.Errorf("identity: parse JWS: %w", err)
	}
	return jws.Signatures[0].Protected, nil
}
