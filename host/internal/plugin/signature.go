package plugin

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// Plugin signatures: `skillhost plugin sign` writes SignatureFile beside the
// manifest, a JWS in the general JSON serialization (RFC 7515 §7.2.1) whose
// payload is a Statement — the manifest's SHA-256 together with the
// module's — signed by one or more publisher keys.
const (
	// SignatureFile is the detached signature of a plugin folder.
	SignatureFile = "plugin.sig"
	// StatementType is the Statement's "type" and the JWS "typ".
	StatementType = "skillhost-plugin/v1"
	// signatureType is the protected "typ" of a plugin signature.
	signatureType = "skillhost-plugin+jws"
	// signerKeyHeader carries the signer's public key (a JWK) in the
	// protected header, so a signature can be checked without a trust
	// list; trust comes only from the key id being in the list.
	signerKeyHeader = "signer_jwk"
	// MaxSignatureBytes caps plugin.sig (a hybrid signature is ~10 KiB).
	MaxSignatureBytes = 256 << 10
	maxSignatures     = 8
)

// Statement is what a plugin signature signs.
type Statement struct {
	Type           string `json:"type"`
	Name           string `json:"name"`
	Version        string `json:"version"`
	ManifestSHA256 string `json:"manifest_sha256"` // of plugin.yaml's bytes
	Wasm           string `json:"wasm"`            // the manifest's wasm path
	WasmSHA256     string `json:"wasm_sha256"`
}

// NewStatement is the statement of a plugin folder's manifest bytes,
// decoded manifest and module digest (lowercase hex).
func NewStatement(m *Manifest, manifest []byte, wasmSHA256 string) Statement {
	sum := sha256.Sum256(manifest)
	return Statement{Type: StatementType, Name: m.Name, Version: m.Version, ManifestSHA256: hex.EncodeToString(sum[:]),
		Wasm: path.Clean(filepath.ToSlash(m.Wasm)), WasmSHA256: wasmSHA256}
}

// Publisher is a trusted publisher key; Name is how it is shown (the key
// file's name without extension).
type Publisher struct {
	Name string
	Key  *identity.PublicKey
}

// Trust is the operator's policy for plugin signatures (config trust.*).
type Trust struct {
	// Require refuses a plugin without a valid signature by a Publisher.
	Require bool
	// Publishers are the trusted keys.
	Publishers []Publisher
}

func (t Trust) publisher(kid string) (Publisher, bool) {
	for _, p := range t.Publishers {
		if p.Key.KeyID() == kid {
			return p, true
		}
	}
	return Publisher{}, false
}

// Signer is one valid signature of a loaded plugin.
type Signer struct {
	KeyID     string `json:"kid"`
	Alg       string `json:"alg"`
	Publisher string `json:"publisher,omitempty"` // the trusted publisher's name; "" when the key is not trusted
	Trusted   bool   `json:"trusted"`
}

// Signing is what a plugin's signature file proved: the statement and every
// signature that verified.
type Signing struct {
	Statement Statement `json:"statement"`
	Signers   []Signer  `json:"signers"`
}

// Trusted reports whether a trusted publisher signed.
func (s *Signing) Trusted() bool {
	if s == nil {
		return false
	}
	for _, sg := range s.Signers {
		if sg.Trusted {
			return true
		}
	}
	return false
}

// SignFolder signs the plugin folder dir with signer's keys and writes
// dir/plugin.sig (replacing an earlier signature): one signature per key,
// each carrying its public key (signer_jwk). It returns the statement.
func SignFolder(dir string, signer *identity.Signer, maxModule int64) (Statement, error) {
	st, err := folderStatement(dir, maxModule)
	if err != nil {
		return Statement{}, err
	}
	payload, err := identity.CanonicalValue(st)
	if err != nil {
		return Statement{}, err
	}
	sigs, err := signer.SignDetachedEach(payload, func(k *identity.PublicKey) identity.Header {
		return identity.Header{Type: signatureType, Extra: map[string]any{signerKeyHeader: k.JWK()}}
	})
	if err != nil {
		return Statement{}, err
	}
	doc := struct {
		Payload    string               `json:"payload"`
		Signatures []identity.Signature `json:"signatures"`
	}{Payload: base64.RawURLEncoding.EncodeToString(payload), Signatures: sigs}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return Statement{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, SignatureFile), append(out, '\n'), 0o644); err != nil {
		return Statement{}, err
	}
	return st, nil
}

// folderStatement reads a plugin folder the way the loader does and returns
// its statement.
func folderStatement(dir string, maxModule int64) (Statement, error) {
	data, err := ReadInDir(dir, ManifestFile, MaxManifestBytes)
	if err != nil {
		return Statement{}, &FieldError{File: filepath.Join(dir, ManifestFile), Msg: err.Error()}
	}
	m, err := DecodeManifest(filepath.Join(dir, ManifestFile), data)
	if err != nil {
		return Statement{}, err
	}
	wasm, err := ReadInDir(dir, m.Wasm, maxModule)
	if err != nil {
		return Statement{}, &FieldError{File: m.File, Field: "wasm", Msg: err.Error()}
	}
	return NewStatement(m, data, digestOf(wasm)), nil
}

// VerifyFolder checks dir's plugin.sig against the folder as it is now,
// under trust, without loading the plugin (`skillhost plugin verify`).
func VerifyFolder(dir string, trust Trust, maxModule int64) (*Signing, error) {
	data, err := ReadInDir(dir, ManifestFile, MaxManifestBytes)
	if err != nil {
		return nil, &FieldError{File: filepath.Join(dir, ManifestFile), Msg: err.Error()}
	}
	m, err := DecodeManifest(filepath.Join(dir, ManifestFile), data)
	if err != nil {
		return nil, err
	}
	wasm, err := ReadInDir(dir, m.Wasm, maxModule)
	if err != nil {
		return nil, &FieldError{File: m.File, Field: "wasm", Msg: err.Error()}
	}
	s, err := checkSignature(dir, NewStatement(m, data, digestOf(wasm)), trust)
	if err == nil && s == nil {
		err = &FieldError{File: filepath.Join(dir, SignatureFile), Msg: "the plugin is not signed (no " + SignatureFile + "; sign it with `skillhost plugin sign`)"}
	}
	return s, err
}

// checkSignature verifies dir's plugin.sig against want (the folder's
// statement) under trust. No signature file: nil, or an error when trust
// requires one. A signature file that is malformed, whose statement is not
// want (the folder changed after signing) or whose signature does not
// verify is always an error; under Require, so is one no trusted publisher
// made.
func checkSignature(dir string, want Statement, trust Trust) (*Signing, error) {
	file := filepath.Join(dir, SignatureFile)
	bad := func(format string, args ...any) error {
		return &FieldError{File: file, Msg: fmt.Sprintf(format, args...)}
	}
	raw, err := ReadInDir(dir, SignatureFile, MaxSignatureBytes)
	if errors.Is(err, fs.ErrNotExist) {
		if trust.Require {
			return nil, bad("unsigned plugin refused: trust.require_signatures is on and there is no %s (sign it with `skillhost plugin sign`)", SignatureFile)
		}
		return nil, nil
	}
	if err != nil {
		return nil, bad("%v", err)
	}
	if err := identity.CheckStrict(raw); err != nil {
		return nil, bad("not a JWS in JSON serialization: %v", err)
	}
	jws, err := jose.ParseSignedJSON(string(raw), identity.Algorithms)
	if err != nil {
		return nil, bad("not a JWS in JSON serialization: %v", err)
	}
	if len(jws.Signatures) > maxSignatures {
		return nil, bad("%d signatures, more than %d", len(jws.Signatures), maxSignatures)
	}
	payload := jws.UnsafePayloadWithoutVerification()
	var got Statement
	if err := identity.DecodeKnown(payload, &got); err != nil || got.Type != StatementType {
		return nil, bad("payload is not a %s statement", StatementType)
	}
	if d := statementDiff(want, got); d != "" {
		return nil, bad("tampered: the folder does not match its signature (%s)", d)
	}
	s := &Signing{Statement: got}
	for i, sig := range jws.Signatures {
		h := sig.Protected
		if h.KeyID == "" {
			return nil, bad("signature %d has no kid", i)
		}
		key, trusted := trust.publisher(h.KeyID)
		pub := key.Key
		if !trusted {
			if pub, err = embeddedKey(h); err != nil {
				if trust.Require {
					continue // not checkable, and not trusted anyway
				}
				return nil, bad("signature %d: %v", i, err)
			}
		}
		if err := verifyOne(jws, i, pub); err != nil {
			return nil, bad("tampered: signature %d (key %s) does not verify", i, h.KeyID)
		}
		s.Signers = append(s.Signers, Signer{KeyID: h.KeyID, Alg: h.Algorithm, Publisher: key.Name, Trusted: trusted})
	}
	if trust.Require && !s.Trusted() {
		kids := make([]string, 0, len(jws.Signatures))
		for _, sig := range jws.Signatures {
			kids = append(kids, sig.Protected.KeyID)
		}
		return nil, bad("untrusted publisher: signed by key %s, which is not in trust.publishers", strings.Join(kids, ", "))
	}
	return s, nil
}

// statementDiff names the fields where got differs from want.
func statementDiff(want, got Statement) string {
	var d []string
	add := func(field, w, g string) {
		if w != g {
			d = append(d, fmt.Sprintf("%s is %s, signed %s", field, clipHash(w), clipHash(g)))
		}
	}
	add("name", want.Name, got.Name)
	add("version", want.Version, got.Version)
	add("plugin.yaml sha256", want.ManifestSHA256, got.ManifestSHA256)
	add("wasm", want.Wasm, got.Wasm)
	add("module sha256", want.WasmSHA256, got.WasmSHA256)
	return strings.Join(d, "; ")
}

func clipHash(s string) string { return truncate(s, 16) }

// embeddedKey is the signer key carried in the protected header, which must
// be the key named by kid.
func embeddedKey(h jose.Header) (*identity.PublicKey, error) {
	raw, ok := h.ExtraHeaders[signerKeyHeader]
	if !ok {
		return nil, fmt.Errorf("key %s is unknown here and the signature carries no %s", h.KeyID, signerKeyHeader)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var j identity.JWK
	if err := identity.Decode(b, &j); err != nil {
		return nil, fmt.Errorf("bad %s: %w", signerKeyHeader, err)
	}
	j.Kid = h.KeyID // must be the key's thumbprint
	return j.PublicKey()
}

// verifyOne verifies signature i of jws with key.
func verifyOne(jws *jose.JSONWebSignature, i int, key *identity.PublicKey) error {
	one := *jws
	one.Signatures = jws.Signatures[i : i+1]
	_, err := one.Verify(key)
	return err
}
