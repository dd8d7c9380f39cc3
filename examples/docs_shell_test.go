package examples_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The docs' copy-paste commands are run by the test, not by a shell: this
// file reads the small part of POSIX shell they use — words in '…' or "…"
// (with $VAR), $VAR, `\` line continuations, VAR=$(curl … | jq -r PATH) and
// VAR=$(curl … | grep -i '^header:' | …) — and matches answers against the
// answers the docs show.

// shellLines joins continued lines and drops blank lines and comments.
func shellLines(block string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(block, "\n") {
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		cur += l
		if t := strings.TrimSpace(cur); t != "" && !strings.HasPrefix(t, "#") {
			out = append(out, t)
		}
		cur = ""
	}
	return out
}

// shellWords splits a command into words, expanding $VAR from vars.
func shellWords(line string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	expand := func(s string, i int) int { // s[i] == '$'
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		cur.WriteString(vars[s[i+1:j]])
		return j
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			i++
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			inWord, i = true, i+end+2
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`, line[i+1]) >= 0:
					cur.WriteByte(line[i+1])
					i++
				case line[i] == '$':
					i = expand(line, i) - 1
				default:
					cur.WriteByte(line[i])
				}
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unclosed \" in %q", line)
			}
			inWord, i = true, i+1
		case c == '$':
			i, inWord = expand(line, i), true
		default:
			cur.WriteByte(c)
			inWord, i = true, i+1
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// splitPipe cuts a command at the pipes outside quotes.
func splitPipe(line string) []string {
	var parts []string
	quote, start := byte(0), 0
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote == 0 && c == '|':
			parts = append(parts, strings.TrimSpace(line[start:i]))
			start = i + 1
		}
	}
	return append(parts, strings.TrimSpace(line[start:]))
}

// curlReq is what a curl command of the docs asks for.
type curlReq struct {
	method, url, body string
	header            map[string]string
}

// parseCurl reads the options the docs use: -s, -N, -i, -X, -H, -d, -D -,
// -o /dev/null. Anything else is refused, so a new option gets handled.
func parseCurl(words []string) (curlReq, error) {
	r := curlReq{method: "GET", header: map[string]string{}}
	if len(words) == 0 || words[0] != "curl" {
		return r, fmt.Errorf("not a curl command: %q", words)
	}
	for i := 1; i < len(words); i++ {
		w := words[i]
		next := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("%s needs a value", w)
			}
			i++
			return words[i], nil
		}
		var err error
		var v string
		switch w {
		case "-s", "-N", "-sN", "-i", "-si":
		case "-X":
			r.method, err = next()
		case "-H":
			if v, err = next(); err == nil {
				k, val, _ := strings.Cut(v, ":")
				r.header[strings.TrimSpace(k)] = strings.TrimSpace(val)
			}
		case "-d":
			if r.body, err = next(); r.method == "GET" {
				r.method = "POST"
			}
		case "-D", "-o":
			_, err = next() // the test reads headers and body anyway
		default:
			if strings.HasPrefix(w, "-") || r.url != "" {
				return r, fmt.Errorf("curl option or argument %q is not supported by the docs test", w)
			}
			r.url = w
		}
		if err != nil {
			return r, err
		}
	}
	if r.url == "" {
		return r, fmt.Errorf("curl without a URL: %q", words)
	}
	return r, nil
}

// jqPath reads a `jq -r .a.b[0].c` path from a decoded JSON value.
func jqPath(v any, path string) (string, error) {
	for _, seg := range regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]`).FindAllStringSubmatch(path, -1) {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg[1]]
		case []any:
			n, _ := strconv.Atoi(seg[2])
			if n >= len(x) {
				return "", fmt.Errorf("%s: index %d out of range", path, n)
			}
			v = x[n]
		default:
			return "", fmt.Errorf("%s: %q of a %T", path, seg[0], v)
		}
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	if v == nil {
		return "", fmt.Errorf("%s: no such value", path)
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// sseData returns the data lines of a Server-Sent Events body, each decoded.
func sseData(body string) ([]any, error) {
	var out []any
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v any
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				return nil, fmt.Errorf("data line %q: %w", d, err)
			}
			out = append(out, v)
		}
	}
	return out, sc.Err()
}

// ellipsis stands, in the answers the docs show, for what differs between
// runs: a string "…" matches any value, a string holding "…" matches
// strings with the same text around it, a last array element "…" lets the
// other elements match a subsequence of a longer array, and a member named
// "…" marks an object as shortened (objects always match by subset).
const ellipsis = "…"

// matchShown checks got against the answer shown in the docs.
func matchShown(shown, got any, at string) error {
	switch s := shown.(type) {
	case string:
		if s == ellipsis {
			return nil
		}
		g, ok := got.(string)
		if !ok {
			return fmt.Errorf("%s: got %v, the docs show %q", at, got, s)
		}
		if !strings.Contains(s, ellipsis) {
			if g != s {
				return fmt.Errorf("%s: got %q, the docs show %q", at, g, s)
			}
			return nil
		}
		parts := strings.Split(s, ellipsis)
		if !strings.HasPrefix(g, parts[0]) || !strings.HasSuffix(g, parts[len(parts)-1]) {
			return fmt.Errorf("%s: got %q, the docs show %q", at, g, s)
		}
		rest := g[len(parts[0]):]
		for _, p := range parts[1:] {
			i := strings.Index(rest, p)
			if i < 0 {
				return fmt.Errorf("%s: got %q, the docs show %q", at, g, s)
			}
			rest = rest[i+len(p):]
		}
		return nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %v, the docs show an object", at, got)
		}
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if k == ellipsis {
				continue
			}
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing from the answer", at, k)
			}
			if err := matchShown(s[k], gv, at+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: got %v, the docs show an array", at, got)
		}
		if n := len(s); n > 0 && s[n-1] == ellipsis {
			j := 0
			for i, want := range s[:n-1] {
				for j < len(g) && matchShown(want, g[j], at) != nil {
					j++
				}
				if j == len(g) {
					return fmt.Errorf("%s[%d]: no element of the answer matches %v", at, i, want)
				}
				j++
			}
			return nil
		}
		if len(g) != len(s) {
			return fmt.Errorf("%s: %d elements, the docs show %d", at, len(g), len(s))
		}
		for i := range s {
			if err := matchShown(s[i], g[i], fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	default:
		if !cmp.Equal(shown, got) {
			return fmt.Errorf("%s: got %v, the docs show %v", at, got, shown)
		}
		return nil
	}
}

// TestDocShell: the shell reading and the matching of shown answers.
func TestDocShell(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"TASK": "t-1", "SESSION": "s 1"}
	words, err := shellWords(`curl -s "127.0.0.1:8080/a2a/tasks/$TASK" -H "Mcp-Session-Id: $SESSION" -d '{"id":"'"$TASK"'"}'`, vars)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"curl", "-s", "127.0.0.1:8080/a2a/tasks/t-1", "-H", "Mcp-Session-Id: s 1", "-d", `{"id":"t-1"}`}, words); diff != "" {
		t.Errorf("shellWords (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`a '|' b`, `c`}, splitPipe(`a '|' b | c`)); diff != "" {
		t.Errorf("splitPipe (-want +got):\n%s", diff)
	}
	if _, err := parseCurl([]string{"curl", "--insecure", "x"}); err == nil {
		t.Error("an unknown curl option was accepted")
	}
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		shown, got string
		ok         bool
	}{
		{`{"a":"…","b":[1,"…"]}`, `{"a":{"x":1},"b":[0,1,2],"c":3}`, true},
		{`{"a":"x…z"}`, `{"a":"xyyz"}`, true},
		{`{"a":"x…z"}`, `{"a":"xyy"}`, false},
		{`{"a":[1,2]}`, `{"a":[1,2,3]}`, false},
		{`{"a":[2,1,"…"]}`, `{"a":[1,2]}`, false},
		{`{"a":1}`, `{"b":1}`, false},
		{`{"a":true}`, `{"a":"true"}`, false},
	}
	for _, tt := range tests {
		if err := matchShown(decode(tt.shown), decode(tt.got), "$"); (err == nil) != tt.ok {
			t.Errorf("matchShown(%s, %s) = %v, want ok %v", tt.shown, tt.got, err, tt.ok)
		}
	}
	if v, err := jqPath(decode(`{"result":{"task":{"id":"x"}},"l":[{"n":2}]}`), ".result.task.id"); err != nil || v != "x" {
		t.Errorf("jqPath = %q, %v", v, err)
	}
}
