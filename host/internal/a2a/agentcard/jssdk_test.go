package agentcard_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
)

// jsVerifier installs ../testdata/jsverify (the official @a2a-js/sdk, pinned
// by its package-lock.json) once into the user cache and returns the
// folder holding verify.mjs. node and npm are needed; the test is skipped
// without them, except in CI (CI=true), where .ci/run installs them.
func jsVerifier(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not on PATH", tool)
			}
			t.Skipf("%s is not on PATH (CI installs it)", tool)
		}
	}
	src := "../testdata/jsverify" // shared with examples (docs programs)
	h := sha256.New()
	files := []string{"package.json", "package-lock.json", "verify.mjs"}
	for _, f := range files {
		h.Write(mustRead(t, filepath.Join(src, f)))
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "skillhost-test", "a2a-js-verify-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err == nil {
		return dir
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if tmp, err = os.MkdirTemp(filepath.Dir(dir), "install-"); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f), mustRead(t, filepath.Join(src, f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (the official A2A JS SDK): %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(dir); serr != nil { // another test process won the rename
			t.Fatal(err)
		}
	}
	_ = os.RemoveAll(tmp)
	return dir
}

type jsResult struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Canonical string `json:"canonical"`
}

func runJSVerify(t *testing.T, dir string, card, jwks []byte) jsResult {
	t.Helper()
	tmp := t.TempDir()
	cardFile, jwksFile := filepath.Join(tmp, "card.json"), filepath.Join(tmp, "jwks.json")
	if err := os.WriteFile(cardFile, card, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jwksFile, jwks, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(dir, "verify.mjs"), cardFile, jwksFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.mjs: %v\n%s", err, stderr.String())
	}
	var r jsResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("verify.mjs printed %q: %v", out, err)
	}
	return r
}

// The official A2A JS SDK's verifier (verifyAgentCardSignature, run with
// node) accepts the served cards, computes the same canonical form, and
// rejects a card with one byte changed. With SKILLHOST_UPDATE_GOLDEN=1 it
// also rewrites the golden canonical forms of testdata/cardcanon.
func TestSignedCardWithJSSDK(t *testing.T) {
	t.Parallel()
	dir := jsVerifier(t)
	signer := mustHybridSigner(t)
	jwks, err := json.Marshal(signer.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	host, agent := signedCards(t, signer, agentcard.Config{BaseURL: "https://agents.example", Stdio: true, APIKeyAuth: true, BearerAuth: true})
	plain, _ := signedCards(t, signer, agentcard.Config{})
	for name, body := range map[string][]byte{"host": host, "agent": agent, "plain": plain} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := runJSVerify(t, dir, body, jwks)
			if !r.OK {
				t.Fatalf("@a2a-js/sdk rejects the served card: %s", r.Error)
			}
			ours, err := agentcard.Canonical(body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(r.Canonical, string(ours)); diff != "" {
				t.Errorf("canonical form (-sdk +ours):\n%s", diff)
			}
			i := strings.Index(string(body), `"name": "`) + len(`"name": "`)
			changed := append([]byte(nil), body...)
			changed[i] ^= 0x01
			if r := runJSVerify(t, dir, changed, jwks); r.OK {
				t.Error("@a2a-js/sdk verified a card with a changed byte")
			}
		})
	}
	t.Run("golden", func(t *testing.T) {
		t.Parallel()
		files, _ := filepath.Glob("testdata/cardcanon/*.json")
		for _, f := range files {
			r := runJSVerify(t, dir, mustRead(t, f), jwks)
			golden := strings.TrimSuffix(f, ".json") + ".canonical"
			if os.Getenv("SKILLHOST_UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(golden, []byte(r.Canonical), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if diff := cmp.Diff(string(mustRead(t, golden)), r.Canonical); diff != "" {
				t.Errorf("%s: the SDK's canonical form is not the golden one (-golden +sdk):\n%s", f, diff)
			}
		}
	})
}
