package main

import (
	"os"
	"os/exec"
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

// A task run by a host with a key verifies with verify-task (from a file,
// from stdin, fetched by id), and an edited transition is named.
func TestVerifyTask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "host.key")
	if _, errOut, code := runCLI(t, "keygen", "--out", key); code != 0 {
		t.Fatalf("keygen: %s", errOut)
	}
	plugins := filepath.Join(dir, "plugins")
	wasm, err := os.ReadFile(filepath.Join("..", "..", "host", "internal", "sandbox", "testdata", "hostile.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(plugins, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(plugins, "tools", "hostile.wasm"), string(wasm))
	writeFile(t, filepath.Join(plugins, "tools", "plugin.yaml"), "name: tools\nversion: 1.0.0\ndescription: d\nwasm: hostile.wasm\nskills:\n  - {id: echo, description: d, function: echo}\n")
	cfg := filepath.Join(dir, "skillhost.yaml")
	writeFile(t, cfg, "identity:\n  key_file: "+key+"\n")
	h := startHost(t, filepath.Join(dir, "data"), plugins, "--config", cfg)

	r := call(t, h.url, "SendMessage", map[string]any{"message": map[string]any{"messageId": "m1", "role": "ROLE_USER",
		"parts": []any{map[string]any{"data": map[string]any{"x": 1}}}, "metadata": map[string]any{"skillId": "echo"}}})
	var sent struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	mustResult(t, r, &sent)
	got := call(t, h.url, "GetTask", map[string]any{"id": sent.Task.ID})
	taskFile := filepath.Join(dir, "task.json")
	writeFile(t, taskFile, string(got.Result))

	if out, errOut, code := runCLI(t, "verify-task", taskFile, "--pub", key+".pub"); code != 0 || !strings.HasPrefix(out, "valid: task "+sent.Task.ID+", 4 links") {
		t.Errorf("verify-task FILE: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "verify-task", "--id", sent.Task.ID, "--url", h.url); code != 0 || !strings.Contains(errOut, "pin them with --pub") {
		t.Errorf("verify-task --id: %d %s %s", code, out, errOut)
	}
	edited := strings.Replace(string(got.Result), `"to":"TASK_STATE_WORKING"`, `"to":"TASK_STATE_AUTH_REQUIRED"`, 1)
	if edited == string(got.Result) {
		t.Fatalf("no working transition in %s", got.Result)
	}
	cmd := exec.Command(binPath, "verify-task", "--pub", key+".pub")
	cmd.Stdin = strings.NewReader(edited)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "invalid: link 1 (task:"+sent.Task.ID+") field signatures") {
		t.Errorf("verify-task of an edited task: %v %s", err, out)
	}
	other := filepath.Join(dir, "other.key")
	runCLI(t, "keygen", "--out", other)
	if _, errOut, code := runCLI(t, "verify-task", taskFile, "--pub", other+".pub"); code != 1 || !strings.Contains(errOut, "none of which is trusted") {
		t.Errorf("verify-task with another key: %d %s", code, errOut)
	}
}
