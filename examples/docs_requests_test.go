package examples_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// docPages are the pages whose marked blocks TestDocRequests runs, in this
// order, against one host: the README's quick starts and the getting-started
// pages, whose requests newcomers copy.
var docPages = []string{"README.md", "docs/getting-started/operator.md", "docs/getting-started/agent-client.md"}

// A page marks a fenced block with an HTML comment on the line before it,
// <!-- doccheck: KIND -->, invisible on GitHub:
//
//	request             shell commands (curl, skillhost call) run in order
//	response            the answer of the request block's last command
//	push                what the push receiver gets, one "token JSON" a line
//	go, node            a program built (go) or run (node) against the host
//	output              what the program before it prints
//	mcp-stdio-command   the command that serves MCP on stdio
//	mcp-stdio           lines written to it; its response block: the answers
//
// In the page, the host is 127.0.0.1:8080 and a local push receiver
// 127.0.0.1:9000; answers show "…" where runs differ (see matchShown).
var markerRE = regexp.MustCompile(`^\s*<!-- doccheck: ([a-z-]+) -->\s*$`)

// docBlock is one marked fenced block.
type docBlock struct {
	kind, lang, body string
	line             int
}

// markedBlocks lists the marked blocks of a page in order.
func markedBlocks(t *testing.T, d *mdDoc) []docBlock {
	t.Helper()
	var out []docBlock
	for i := 0; i < len(d.lines); i++ {
		m := markerRE.FindStringSubmatch(d.lines[i])
		if m == nil {
			continue
		}
		j := i + 1
		for j < len(d.lines) && strings.TrimSpace(d.lines[j]) == "" {
			j++
		}
		if j == len(d.lines) || !d.fenced[j] {
			t.Fatalf("%s:%d: doccheck marker without a fenced block after it", d.path, i+1)
		}
		b := docBlock{kind: m[1], lang: strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(d.lines[j]), "`~")), line: j + 1}
		var body []string
		for j++; j < len(d.lines) && d.fenced[j] && !strings.HasPrefix(strings.TrimSpace(d.lines[j]), "```"); j++ {
			body = append(body, d.lines[j])
		}
		b.body = strings.Join(body, "\n")
		out = append(out, b)
		i = j
	}
	return out
}

// TestDocRequests runs the requests, programs and transcripts the README and
// the getting-started pages show against a real host (the skillhost binary,
// the first-party echo, notes and text plugins built from plugins/) and
// checks each answer against the one the page shows.
func TestDocRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three Go plugins and starts a host")
	}
	t.Parallel()
	plugins := mustDocPlugins(t)
	r := &docRun{t: t, vars: map[string]string{}, plugins: plugins, pushes: make(chan string, 64)}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.pushes <- req.Header.Get("A2A-Notification-Token") + " " + string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	r.receiver = strings.TrimPrefix(recv.URL, "http://")
	r.host = mustDocHost(t, plugins)
	for _, page := range docPages {
		b, err := os.ReadFile(filepath.Join(repoRoot, page))
		if err != nil {
			t.Fatal(err)
		}
		blocks := markedBlocks(t, parseMarkdown(page, string(b)))
		if len(blocks) == 0 {
			t.Errorf("%s has no doccheck blocks", page)
		}
		t.Run(strings.ReplaceAll(page, "/", "_"), func(t *testing.T) {
			r.t = t
			for i, blk := range blocks {
				answered := i+1 < len(blocks) && blocks[i+1].kind == "response"
				r.run(page, blk, answered)
			}
		})
	}
}

// mustDocPlugins builds the first-party plugins the pages call into a new
// plugin folder.
func mustDocPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"echo", "notes", "text"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", filepath.Join(dir, name, name+".wasm"), "./"+name)
		cmd.Dir = filepath.Join(repoRoot, "plugins")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building plugins/%s: %v\n%s", name, err, out)
		}
		m, err := os.ReadFile(filepath.Join(repoRoot, "plugins", name, "plugin.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "plugin.yaml"), m, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mustDocHost starts `skillhost serve` on a free loopback port, with the
// push receiver's loopback address allowed, and returns host:port once it
// serves. It is stopped with SIGINT when the test ends.
func mustDocHost(t *testing.T, plugins string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "skillhost.yaml")
	yaml := fmt.Sprintf("listen: 127.0.0.1:0\nplugins: %s\ndata: %s\nhot_reload: false\nnet:\n  allow_private: [127.0.0.1/32]\n",
		plugins, filepath.Join(t.TempDir(), "data"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "skillhost"), "serve", "--config", cfg)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	var mu sync.Mutex
	url := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := regexp.MustCompile(`msg="serving HTTP" url=http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("host log:\n%s", log.String())
			mu.Unlock()
		}
	})
	select {
	case u := <-url:
		waitCompiled(t, u)
		return u
	case <-done:
		t.Fatal("the host exited before serving")
	case <-time.After(5 * time.Minute):
		t.Fatal("the host did not serve within 5 minutes")
	}
	return ""
}

// waitCompiled waits, as the README tells a reader of a first start, until
// the host's plugins have compiled (they do in the background once it
// serves; a call that comes first waits for its plugin within the call's
// deadline, then answers plugin_loading).
func waitCompiled(t *testing.T, hostPort string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := http.Get("http://" + hostPort + "/admin/plugins")
		if err == nil {
			var doc struct{ Plugins []struct{ State string } }
			derr := json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			compiling := derr != nil
			for _, p := range doc.Plugins {
				compiling = compiling || p.State == "loading"
			}
			if !compiling {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the host's plugins did not compile within 5 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// docRun is the state one run of the pages carries from block to block.
type docRun struct {
	t              *testing.T
	host, receiver string
	plugins        string
	vars           map[string]string
	pushes         chan string
	last           docAnswer      // the last command's answer
	lastOut        string         // the last program's output
	mcp            map[string]any // mcp-stdio answers by id
	mcpCommand     []string       // the mcp-stdio-command block's words
	lastKind       string         // the kind of the last block run
	snippets       int            // go programs built so far
}

// docAnswer is what a command answered.
type docAnswer struct {
	status      int
	contentType string
	body        string
}

func (r *docRun) run(page string, b docBlock, answered bool) {
	t := r.t
	t.Helper()
	at := fmt.Sprintf("%s:%d", page, b.line)
	switch b.kind {
	case "request":
		lines := shellLines(b.body)
		for i, l := range lines {
			r.command(at, l, answered && i == len(lines)-1)
		}
	case "response":
		r.response(at, b)
	case "push":
		r.pushed(at, b.body)
	case "go":
		r.goProgram(at, b.body)
	case "node":
		r.nodeProgram(at, b.body)
	case "output":
		r.output(at, b.body)
	case "mcp-stdio-command":
		words, err := shellWords(shellLines(b.body)[0], r.vars)
		if err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		r.mcpCommand = words
	case "mcp-stdio":
		r.mcpStdio(at, b.body)
	default:
		t.Fatalf("%s: unknown doccheck kind %q", at, b.kind)
	}
	r.lastKind = b.kind
}

var captureRE = regexp.MustCompile(`^([A-Z_]+)=\$\((.*)\)$`)

// command runs one line of a request block. Unless the page shows its
// answer, it must succeed: HTTP 2xx and no JSON-RPC error.
func (r *docRun) command(at, line string, answered bool) {
	t := r.t
	t.Helper()
	capture, pipeline := "", line
	if m := captureRE.FindStringSubmatch(line); m != nil {
		capture, pipeline = m[1], m[2]
	}
	stages := splitPipe(pipeline)
	words, err := shellWords(stages[0], r.vars)
	if err != nil {
		t.Fatalf("%s: %v", at, err)
	}
	var ans docAnswer
	var header http.Header
	switch {
	case words[0] == "curl":
		req, err := parseCurl(words)
		if err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		ans, header = r.curl(at, req)
	case words[0] == "bin/skillhost" || words[0] == "skillhost":
		ans = r.skillhost(at, words[1:])
	default:
		t.Fatalf("%s: the docs test runs curl and skillhost commands, not %q", at, words[0])
	}
	r.last = ans
	if !answered {
		if err := succeeded(ans); err != nil {
			t.Errorf("%s: %s: %v", at, line, err)
		}
	}
	if capture == "" {
		return
	}
	switch st := stages[1:]; {
	case len(st) == 1 && strings.HasPrefix(st[0], "jq -r "):
		var v any
		if err := json.Unmarshal([]byte(ans.body), &v); err != nil {
			t.Fatalf("%s: %s: the answer is not JSON: %v", at, capture, err)
		}
		if r.vars[capture], err = jqPath(v, strings.TrimPrefix(st[0], "jq -r ")); err != nil {
			t.Fatalf("%s: %s: %v", at, capture, err)
		}
	case len(st) >= 1 && strings.HasPrefix(st[0], "grep -i '^"):
		name := strings.TrimSuffix(strings.TrimPrefix(st[0], "grep -i '^"), ":'")
		if r.vars[capture] = header.Get(name); r.vars[capture] == "" {
			t.Fatalf("%s: %s: no %s header in the answer", at, capture, name)
		}
	default:
		t.Fatalf("%s: %s=$(…): pipeline %q is not supported by the docs test", at, capture, stages[1:])
	}
}

// curl sends the request to the test host (and push URLs to the test's
// receiver) and reads the whole answer.
func (r *docRun) curl(at string, req curlReq) (docAnswer, http.Header) {
	t := r.t
	t.Helper()
	url := strings.Replace(strings.TrimPrefix(req.url, "http://"), "127.0.0.1:8080", r.host, 1)
	body := strings.ReplaceAll(req.body, "127.0.0.1:9000", r.receiver)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, req.method, "http://"+url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", at, err)
	}
	for k, v := range req.header {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", at, req.method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", at, err)
	}
	return docAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: string(b)}, resp.Header
}

// skillhost runs the binary with the page's arguments against the test host.
func (r *docRun) skillhost(at string, args []string) docAnswer {
	r.t.Helper()
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "127.0.0.1:8080", r.host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "skillhost"), args...)
	cmd.Env = append(os.Environ(), "SKILLHOST_URL=http://"+r.host)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	ans := docAnswer{status: 200, contentType: "application/json", body: string(out)}
	if err != nil {
		ans.status = 500
		ans.body = string(out) + stderr.String()
	}
	return ans
}

// succeeded: HTTP 2xx, and no JSON-RPC error in a JSON or SSE answer.
func succeeded(a docAnswer) error {
	if a.status < 200 || a.status > 299 {
		return fmt.Errorf("HTTP %d: %.300s", a.status, a.body)
	}
	values, err := answerValues(a)
	if err != nil {
		return nil // not JSON (a card's ETag, an empty 202): the status says it
	}
	for _, v := range values {
		if m, ok := v.(map[string]any); ok && m["error"] != nil {
			return fmt.Errorf("error: %v", m["error"])
		}
	}
	return nil
}

// answerValues decodes a JSON answer, or the data lines of an SSE one.
func answerValues(a docAnswer) ([]any, error) {
	if strings.HasPrefix(a.contentType, "text/event-stream") {
		return sseData(a.body)
	}
	var v any
	if err := json.Unmarshal([]byte(a.body), &v); err != nil {
		return nil, err
	}
	return []any{v}, nil
}
