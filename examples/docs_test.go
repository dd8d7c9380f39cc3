package examples_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// repoRoot is the repository, seen from this package.
const repoRoot = ".."

// mdDoc is one markdown file cut into what the checks need: its lines with
// each line's place (inside a fenced block or not), and its headings'
// anchors by GitHub's slug rule.
type mdDoc struct {
	path    string // relative to the repository root, slash-separated
	lines   []string
	fenced  []bool // the line is a fence or inside a fenced block
	anchors map[string]bool
}

// mustMarkdown reads every markdown file of the repository (build output,
// state folders and node_modules left out), sorted by path.
func mustMarkdown(t *testing.T) []*mdDoc {
	t.Helper()
	var docs []*mdDoc
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, repoRoot+string(filepath.Separator)))
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "bin", "data", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".md") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		docs = append(docs, parseMarkdown(rel, string(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 20 {
		t.Fatalf("found %d markdown files; is the repository root right?", len(docs))
	}
	return docs
}

var headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// parseMarkdown splits s into lines, marks fenced blocks (``` or ~~~, also
// indented inside list items) and collects the headings' anchors.
func parseMarkdown(path, s string) *mdDoc {
	d := &mdDoc{path: path, lines: strings.Split(s, "\n"), anchors: map[string]bool{}}
	d.fenced = make([]bool, len(d.lines))
	seen := map[string]int{}
	fence := ""
	for i, line := range d.lines {
		trim := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			d.fenced[i] = true
			if strings.HasPrefix(trim, fence) && strings.TrimSpace(strings.TrimLeft(trim, fence[:1])) == "" {
				fence = ""
			}
			continue
		case strings.HasPrefix(trim, "```"), strings.HasPrefix(trim, "~~~"):
			d.fenced[i] = true
			fence = trim[:3]
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			a := slug(m[2])
			if n, ok := seen[a]; ok {
				seen[a] = n + 1
				a = fmt.Sprintf("%s-%d", a, n+1)
			} else {
				seen[a] = 0
			}
			d.anchors[a] = true
		}
	}
	return d
}

var mdLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor of a heading: the rendered text (code spans,
// links and emphasis markers gone), lower-cased, spaces as hyphens, every
// other character but letters, digits, '-' and '_' dropped.
func slug(heading string) string {
	text := mdLinkText.ReplaceAllString(heading, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// stripCode blanks the code spans of a line (their text is not markdown).
func stripCode(line string) string {
	out := []byte(line)
	for i := 0; i < len(out); {
		if out[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(out) && out[i+n] == '`' {
			n++
		}
		end := strings.Index(string(out[i+n:]), strings.Repeat("`", n))
		if end < 0 {
			i += n
			continue
		}
		for j := i; j < i+n+end+n; j++ {
			out[j] = ' '
		}
		i += n + end + n
	}
	return string(out)
}

var linkRE = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// brokenLinks lists the relative links and anchors of d that do not
// resolve: a missing file, a path leaving the repository, an anchor that no
// heading of the target has. byPath holds every markdown file.
func brokenLinks(d *mdDoc, byPath map[string]*mdDoc, exists func(string) bool) []string {
	var bad []string
	for i, line := range d.lines {
		if d.fenced[i] {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(stripCode(line), -1) {
			url := m[2]
			if regexp.MustCompile(`^[a-zA-Z][a-zA-Z+.-]*:`).MatchString(url) {
				continue // http:, https:, mailto:
			}
			path, anchor, _ := strings.Cut(url, "#")
			target := d.path
			if path != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(d.path), path)))
				if target == ".." || strings.HasPrefix(target, "../") || !exists(target) {
					bad = append(bad, fmt.Sprintf("%s:%d: %s: no such file", d.path, i+1, url))
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if doc, ok := byPath[target]; ok && !doc.anchors[anchor] {
				bad = append(bad, fmt.Sprintf("%s:%d: %s: %s has no heading with that anchor", d.path, i+1, url, target))
			}
		}
	}
	return bad
}

// splitRow cuts a table row into its cells on every pipe not escaped with a
// backslash (as GitHub does, code spans included), without the outer pipes.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteString(`\|`)
			i++
		case line[i] == '|':
			cells = append(cells, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	cells = append(cells, cur.String())
	if len(cells) > 0 && strings.TrimSpace(cells[0]) == "" && strings.HasPrefix(line, "|") {
		cells = cells[1:]
	}
	if len(cells) > 0 && strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		cells = cells[:len(cells)-1]
	}
	return cells
}

var separatorCell = regexp.MustCompile(`^\s*:?-+:?\s*$`)

// badTables lists the tables of d that GitHub would not render as meant:
// rows that start no table (a header and a separator row must come first,
// so a blank line inside a table shows here), and rows whose cell count
// differs from the header's.
func badTables(d *mdDoc) []string {
	var bad []string
	for i := 0; i < len(d.lines); i++ {
		if d.fenced[i] || !strings.HasPrefix(strings.TrimSpace(d.lines[i]), "|") {
			continue
		}
		start := i
		for i < len(d.lines) && !d.fenced[i] && strings.HasPrefix(strings.TrimSpace(d.lines[i]), "|") {
			i++
		}
		rows := d.lines[start:i]
		header := splitRow(rows[0])
		if len(rows) < 2 || !isSeparator(rows[1], len(header)) {
			bad = append(bad, fmt.Sprintf("%s:%d: table rows without a header and separator row (a blank line inside a table?): %.80s", d.path, start+1, rows[0]))
			continue
		}
		for j, row := range rows[2:] {
			if n := len(splitRow(row)); n != len(header) {
				bad = append(bad, fmt.Sprintf("%s:%d: %d cells, the header has %d (an unescaped | ?): %.80s", d.path, start+3+j, n, len(header), row))
			}
		}
	}
	return bad
}

func isSeparator(line string, cells int) bool {
	sep := splitRow(line)
	if len(sep) != cells {
		return false
	}
	for _, c := range sep {
		if !separatorCell.MatchString(c) {
			return false
		}
	}
	return true
}

// TestDocLinks: every relative link and #anchor in the repository's
// markdown (README, docs/, examples/, plugins/) resolves.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	docs := mustMarkdown(t)
	byPath := map[string]*mdDoc{}
	for _, d := range docs {
		byPath[d.path] = d
	}
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p)))
		return err == nil
	}
	for _, d := range docs {
		for _, b := range brokenLinks(d, byPath, exists) {
			t.Error(b)
		}
	}
}

// TestDocTables: every markdown table is well-formed.
func TestDocTables(t *testing.T) {
	t.Parallel()
	for _, d := range mustMarkdown(t) {
		for _, b := range badTables(d) {
			t.Error(b)
		}
	}
}

// TestReadmeLength: the README stays a front door (issue 25: at most 250
// lines; the rest belongs in docs/).
func TestReadmeLength(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, want at most 250: move the detail to docs/", n)
	}
}

// TestConfigErrorNamesTheReference: the unknown-key error sends users to a
// file that exists and holds the configuration table.
func TestConfigErrorNamesTheReference(t *testing.T) {
	t.Parallel()
	_, err := config.Load(config.Sources{Environ: []string{"SKILLHOST_LISTN=x"}})
	if err == nil {
		t.Fatal("an unknown key loaded")
	}
	m := regexp.MustCompile(`docs/[a-z/_-]+\.md`).FindString(err.Error())
	if m == "" {
		t.Fatalf("the error names no doc: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, m))
	if err != nil {
		t.Fatalf("the error names %s: %v", m, err)
	}
	if !strings.Contains(string(b), "| key | flag | default | meaning |") || !strings.Contains(string(b), "| `listen` |") {
		t.Errorf("%s has no configuration table", m)
	}
}

// TestDocCheckers: the checks above catch what they are for.
func TestDocCheckers(t *testing.T) {
	t.Parallel()
	target := parseMarkdown("docs/b.md", "# B title\n## `skillhost plugin …`: the kit\n## Same\n## Same\n")
	byPath := map[string]*mdDoc{"docs/b.md": target}
	exists := func(p string) bool { return p == "docs/b.md" || p == "README.md" }
	tests := []struct {
		name, md string
		want     []string
	}{
		{"good links", "[b](b.md) [t](b.md#b-title) [k](b.md#skillhost-plugin--the-kit) [s](b.md#same-1) [r](../README.md) [w](https://x.example/y)\n", nil},
		{"missing file", "[x](nope.md)\n", []string{"docs/a.md:1: nope.md: no such file"}},
		{"outside the repository", "[x](../../etc/passwd)\n", []string{"docs/a.md:1: ../../etc/passwd: no such file"}},
		{"missing anchor", "text [x](b.md#nope)\n", []string{"docs/a.md:1: b.md#nope: docs/b.md has no heading with that anchor"}},
		{"own anchor", "# Here\n[x](#here) [y](#there)\n", []string{"docs/a.md:2: #there: docs/a.md has no heading with that anchor"}},
		{"code and fences are not links", "`[x](nope.md)`\n```\n[y](nope.md)\n```\n", nil},
		{"bad table", "| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n", []string{"docs/a.md:5: table rows without a header and separator row"}},
		{"cell count", "| a | b |\n|---|---|\n| `x|y` | 2 |\n", []string{"docs/a.md:3: 3 cells, the header has 2"}},
		{"escaped pipe", "| a | b |\n|---|---|\n| `x\\|y` | 2 |\n  | indented | ok |\n", nil},
		{"no separator", "| a | b |\n| 1 | 2 |\n", []string{"docs/a.md:1: table rows without a header and separator row"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := parseMarkdown("docs/a.md", tt.md)
			byPath := map[string]*mdDoc{"docs/a.md": d, "docs/b.md": byPath["docs/b.md"]}
			got := append(brokenLinks(d, byPath, exists), badTables(d)...)
			var short []string
			for i, g := range got {
				if i < len(tt.want) && strings.HasPrefix(g, tt.want[i]) {
					g = tt.want[i]
				}
				short = append(short, g)
			}
			if diff := cmp.Diff(tt.want, short); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
