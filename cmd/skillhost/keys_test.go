package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keygen, plugin sign and plugin verify through the binary: exit codes,
// file modes, a tampered folder and an untrusted key.
func TestKeygenSignVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, other := filepath.Join(dir, "alice.key"), filepath.Join(dir, "mallory.key")
	if out, errOut, code := runCLI(t, "keygen", "--out", key); code != 0 || !strings.Contains(out, "kid:") {
		t.Fatalf("keygen: %d %s %s", code, out, errOut)
	}
	if _, _, code := runCLI(t, "keygen", "--out", other, "--alg", "ml-dsa-65"); code != 0 {
		t.Fatalf("keygen ml-dsa-65: %d", code)
	}
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode: %v %v", st.Mode(), err)
	}
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"keygen", "--out", key}, 1},                 // exists
		{[]string{"keygen", "--out", "x", "--alg", "rsa"}, 2}, // unknown alg
		{[]string{"keygen"}, 2},                               // --out missing
		{[]string{"plugin", "sign", dir}, 2},                  // --key missing
	}
	for _, tt := range tests {
		if _, errOut, code := runCLI(t, tt.args...); code != tt.code {
			t.Errorf("%v: exit %d, want %d (%s)", tt.args, code, tt.code, errOut)
		}
	}

	plug := filepath.Join(dir, "p")
	if err := os.MkdirAll(plug, 0o755); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join("..", "..", "host", "internal", "sandbox", "testdata", "hostile.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(plug, "hostile.wasm"), string(wasm))
	writeFile(t, filepath.Join(plug, "plugin.yaml"), "name: p\nversion: 1.0.0\ndescription: d\nwasm: hostile.wasm\nskills:\n  - {id: p-echo, description: d, function: echo}\n")

	if _, errOut, code := runCLI(t, "plugin", "verify", plug); code != 1 || !strings.Contains(errOut, "not signed") {
		t.Errorf("verify unsigned: %d %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "plugin", "sign", plug, "--key", key, "--key", other)
	if code != 0 || strings.Count(out, "signer ") != 2 {
		t.Fatalf("sign: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "plugin", "verify", plug, "--pub", key+".pub"); code != 0 || !strings.Contains(out, "publisher alice") {
		t.Errorf("verify with alice's key: %d %s %s", code, out, errOut)
	}
	if out, _, code := runCLI(t, "plugin", "verify", plug); code != 0 || !strings.Contains(out, "untrusted") {
		t.Errorf("verify without --pub: %d %s", code, out)
	}
	stranger := filepath.Join(dir, "stranger.key")
	runCLI(t, "keygen", "--out", stranger)
	if _, errOut, code := runCLI(t, "plugin", "verify", plug, "--pub", stranger+".pub"); code != 1 || !strings.Contains(errOut, "untrusted publisher") {
		t.Errorf("verify with a stranger's key: %d %s", code, errOut)
	}
	writeFile(t, filepath.Join(plug, "plugin.yaml"), "name: p\nversion: 1.0.1\ndescription: d\nwasm: hostile.wasm\nskills:\n  - {id: p-echo, description: d, function: echo}\n")
	if _, errOut, code := runCLI(t, "plugin", "verify", plug, "--pub", key+".pub"); code != 1 || !strings.Contains(errOut, "tampered") {
		t.Errorf("verify after an edit: %d %s", code, errOut)
	}
}
