package plugin

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// writeSignedPayload writes dir/plugin.sig signing payload (any bytes) with
// s, as SignFolder does for a statement.
func writeSignedPayload(t *testing.T, dir string, s *identity.Signer, payload []byte) {
	t.Helper()
	sigs, err := s.SignDetachedEach(payload, func(k *identity.PublicKey) identity.Header {
		return identity.Header{Type: signatureType, Extra: map[string]any{signerKeyHeader: k.JWK()}}
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(map[string]any{"payload": base64.RawURLEncoding.EncodeToString(payload), "signatures": sigs})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, SignatureFile), string(doc))
}

// TestSignatureStatementIsReadStrictly: a signed statement naming the
// plugin "evil" and then "Name": the real one verified (encoding/json
// folds case and keeps the last) while a case-sensitive reader of the
// same signed statement reads "evil"; a statement or signature file naming
// a member twice is ambiguous the same way. All are refused.
func TestSignatureStatementIsReadStrictly(t *testing.T) {
	t.Parallel()
	alice := mustSigner(t, identity.Ed25519)
	trust := Trust{Require: true, Publishers: publishers(alice, "alice")}
	dir := pluginSpec{name: "v"}.write(t, t.TempDir())
	st, err := folderStatement(dir, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	real := fmt.Sprintf(`"type":%q,"version":%q,"manifest_sha256":%q,"wasm":%q,"wasm_sha256":%q`,
		st.Type, st.Version, st.ManifestSHA256, st.Wasm, st.WasmSHA256)
	tests := []struct {
		name    string
		payload string
		sigFile func(string) string // edits the signature file (nil: as written)
		ok      bool
	}{
		{"as signed", `{"name":"v",` + real + `}`, nil, true},
		{"evil, then Name", `{"name":"evil",` + real + `,"Name":"v"}`, nil, false},
		{"name twice", `{"name":"evil",` + real + `,"name":"v"}`, nil, false},
		{"payload twice in the signature file", `{"name":"v",` + real + `}`, func(doc string) string {
			return strings.Replace(doc, `{"payload":`, `{"payload":"e30","payload":`, 1)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeSignedPayload(t, dir, alice, []byte(tt.payload))
			if tt.sigFile != nil {
				path := filepath.Join(dir, SignatureFile)
				mustWrite(t, path, tt.sigFile(string(mustRead(t, path))))
			}
			_, err := VerifyFolder(dir, trust, 64<<20)
			if (err == nil) != tt.ok {
				t.Errorf("VerifyFolder: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
