package examples_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// shown decodes a block of the page after putting in the test's host and
// the variables the page's commands set.
func (r *docRun) shown(body string) string {
	body = strings.ReplaceAll(body, "127.0.0.1:8080", r.host)
	for k, v := range r.vars {
		body = strings.ReplaceAll(body, "$"+k, v)
	}
	return body
}

// response checks the answer a page shows: of the last command, or, after
// an mcp-stdio block, of each request by id (one JSON a line).
func (r *docRun) response(at string, b docBlock) {
	t := r.t
	t.Helper()
	body := r.shown(b.body)
	if r.lastKind == "mcp-stdio" {
		for i, line := range shellLines(body) {
			var want map[string]any
			if err := json.Unmarshal([]byte(line), &want); err != nil {
				t.Fatalf("%s: line %d: %v", at, i+1, err)
			}
			got, ok := r.mcp[fmt.Sprint(want["id"])]
			if !ok {
				t.Errorf("%s: no answer with id %v", at, want["id"])
				continue
			}
			if err := matchShown(want, got, "$"); err != nil {
				t.Errorf("%s: id %v: %v", at, want["id"], err)
			}
		}
		return
	}
	got, err := answerValues(r.last)
	if err != nil {
		t.Fatalf("%s: the answer is not JSON: %v\n%.500s", at, err, r.last.body)
	}
	var want []any
	if b.lang == "text" {
		if want, err = sseData(body); err != nil {
			t.Fatalf("%s: %v", at, err)
		}
	} else {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: the page's answer is not JSON: %v", at, err)
		}
		want = []any{v}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d answers (events), the page shows %d:\n%.2000s", at, len(got), len(want), r.last.body)
	}
	for i := range want {
		if err := matchShown(want[i], got[i], "$"); err != nil {
			t.Errorf("%s: answer %d: %v\ngot: %.2000s", at, i+1, err, r.last.body)
		}
	}
}

// pushed waits for the push receiver to get the updates the page shows,
// each "token JSON", in order.
func (r *docRun) pushed(at, body string) {
	t := r.t
	t.Helper()
	for i, line := range shellLines(r.shown(body)) {
		token, js, _ := strings.Cut(line, " ")
		var want any
		if err := json.Unmarshal([]byte(js), &want); err != nil {
			t.Fatalf("%s: line %d: %v", at, i+1, err)
		}
		var got string
		select {
		case got = <-r.pushes:
		case <-time.After(time.Minute):
			t.Fatalf("%s: push %d did not arrive within a minute", at, i+1)
		}
		gotToken, gotJS, _ := strings.Cut(got, " ")
		var v any
		if err := json.Unmarshal([]byte(gotJS), &v); err != nil {
			t.Fatalf("%s: push %d is not JSON: %q", at, i+1, got)
		}
		if gotToken != token {
			t.Errorf("%s: push %d carries token %q, the page shows %q", at, i+1, gotToken, token)
		}
		if err := matchShown(want, v, "$"); err != nil {
			t.Errorf("%s: push %d: %v\ngot: %s", at, i+1, err, got)
		}
	}
}

// layout is a folder laid out like a checkout for the programs the pages run
// from one: bin/skillhost, plugins/ (the test's plugins) and
// examples/config/dev.yaml.
func (r *docRun) layout() string {
	t := r.t
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"bin", "examples/config"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(bin, "skillhost"), filepath.Join(dir, "bin", "skillhost")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(r.plugins, filepath.Join(dir, "plugins")); err != nil {
		t.Fatal(err)
	}
	dev, err := os.ReadFile("config/dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "examples", "config", "dev.yaml"), dev, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// goProgram builds the page's program inside this module (through an
// overlay: nothing is written to the tree) and runs it from a checkout-like
// folder against the host.
func (r *docRun) goProgram(at, src string) {
	t := r.t
	t.Helper()
	r.snippets++
	tmp := t.TempDir()
	file := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(src, "127.0.0.1:8080", r.host)), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	pkg := fmt.Sprintf("docsnippet%d", r.snippets)
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(abs, pkg, "main.go"): file}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(tmp, pkg)
	build := exec.Command("go", "build", "-overlay", filepath.Join(tmp, "overlay.json"), "-o", exe, "./"+pkg)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: building the page's Go program: %v\n%s", at, err, out)
	}
	r.lastOut = r.runProgram(at, exe)
}

// nodeProgram runs the page's ES module with the official @a2a-js/sdk (the
// version host/internal/a2a/testdata/jsverify pins, installed once into the
// user cache). Without node and npm it is skipped, except in CI.
func (r *docRun) nodeProgram(at, src string) {
	t := r.t
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s: %s is not on PATH", at, tool)
			}
			t.Logf("%s: skipped: %s is not on PATH (CI installs it)", at, tool)
			r.lastOut = ""
			r.lastKind = "node-skipped"
			return
		}
	}
	dir := jsSDK(r)
	file := filepath.Join(dir, fmt.Sprintf("doccheck-%d.mjs", os.Getpid()))
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(src, "127.0.0.1:8080", r.host)), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(file)
	r.lastOut = r.runProgram(at, "node", file)
}

// runProgram runs a program from a checkout-like folder and returns its
// standard output; it must exit 0.
func (r *docRun) runProgram(at string, name string, args ...string) string {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = r.layout()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: the page's program: %v\nstdout:\n%s\nstderr:\n%s", at, err, out, stderr.String())
	}
	return string(out)
}

// output compares the last program's output with the page's, line by line
// ("…" as in matchShown).
func (r *docRun) output(at, body string) {
	t := r.t
	t.Helper()
	if r.lastKind == "node-skipped" {
		return
	}
	want := strings.Split(strings.TrimRight(r.shown(body), "\n"), "\n")
	got := strings.Split(strings.TrimRight(r.lastOut, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, the page shows %d:\n%s", at, len(got), len(want), r.lastOut)
	}
	for i := range want {
		if err := matchShown(want[i], got[i], fmt.Sprintf("line %d", i+1)); err != nil {
			t.Errorf("%s: %v", at, err)
		}
	}
}

// mcpStdio starts the page's mcp-stdio command from a checkout-like folder,
// writes each line, and waits for the answer of each request with an id
// before writing the next, as someone pasting lines does.
func (r *docRun) mcpStdio(at, body string) {
	t := r.t
	t.Helper()
	if len(r.mcpCommand) == 0 {
		t.Fatalf("%s: an mcp-stdio block needs an mcp-stdio-command block before it", at)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.mcpCommand[0], r.mcpCommand[1:]...)
	cmd.Dir = r.layout()
	cmd.Path = filepath.Join(cmd.Dir, r.mcpCommand[0])
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	r.mcp = map[string]any{}
	for _, req := range shellLines(body) {
		if _, err := io.WriteString(stdin, req+"\n"); err != nil {
			t.Fatalf("%s: writing %s: %v\n%s", at, req, err, stderr.String())
		}
		var msg struct {
			ID any `json:"id"`
		}
		if err := json.Unmarshal([]byte(req), &msg); err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		for id := fmt.Sprint(msg.ID); msg.ID != nil && r.mcp[id] == nil; {
			line, ok := <-lines
			if !ok {
				t.Fatalf("%s: the host's output ended before the answer to id %s\n%s", at, id, stderr.String())
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("%s: the host wrote %q: %v", at, line, err)
			}
			if v["id"] != nil {
				r.mcp[fmt.Sprint(v["id"])] = v
			}
		}
	}
	stdin.Close()
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("%s: the host did not exit cleanly at the end of its input: %v\n%s", at, err, stderr.String())
	}
}

// jsSDK returns the folder where the official JS SDK is installed: the one
// host/internal/a2a's tests install (same files, same cache folder), made by
// `npm ci` if it is not there yet.
func jsSDK(r *docRun) string {
	t := r.t
	t.Helper()
	src := filepath.Join(repoRoot, "host", "internal", "a2a", "testdata", "jsverify")
	files := []string{"package.json", "package-lock.json", "verify.mjs"}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "skillhost-test", "a2a-js-verify-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (the official A2A JS SDK): %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr != nil { // not another test process winning the rename
			t.Fatal(err)
		}
	}
	return dir
}
