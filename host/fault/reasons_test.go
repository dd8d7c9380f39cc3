package fault

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// declaredReasons parses reasons.go: Reason* constant name → value.
func declaredReasons(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("reasons.go: %s is not a string literal", name.Name)
				}
				out[name.Name], _ = strconv.Unquote(lit.Value)
			}
		}
	}
	return out
}

// TestEveryReasonHasKinds: every declared reason is in reasonKinds, and
// every reasonKinds entry is declared.
func TestEveryReasonHasKinds(t *testing.T) {
	t.Parallel()
	var declared, tabled []string
	for _, v := range declaredReasons(t) {
		declared = append(declared, v)
	}
	for r := range reasonKinds {
		tabled = append(tabled, r)
	}
	sort.Strings(declared)
	sort.Strings(tabled)
	if diff := cmp.Diff(declared, tabled); diff != "" {
		t.Errorf("declared reasons vs reasonKinds (-declared +table):\n%s", diff)
	}
	for k := Kind(0); k < numKinds; k++ {
		if r := k.row().reason; !hasKind(reasonKinds[r], k) {
			t.Errorf("kind %v: default reason %q is not listed for it in reasonKinds", k, r)
		}
	}
}

func hasKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// errorsDoc is the error reference; its "## Codes and reasons" table lists
// every (code, reason) pair a client may see.
const errorsDoc = "../../docs/reference/errors.md"

// TestErrorReferenceTable: the error reference's table lists exactly the
// (code, reason) pairs of reasonKinds, and each row's HTTP column the kind's
// status and the reasons with a status of their own (reasonRules).
func TestErrorReferenceTable(t *testing.T) {
	t.Parallel()
	f, err := os.Open(errorsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code := regexp.MustCompile(`^-\d+`)
	reason := regexp.MustCompile("`([a-z0-9_]+)`")
	var doc []string
	in, rows := false, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "## Codes and reasons":
			in = true
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "#"):
			in = false
			continue
		case !strings.HasPrefix(line, "|"):
			if rows > 0 {
				in = false
			}
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 6 {
			t.Fatalf("%s: error table row has %d columns: %s", errorsDoc, len(cols)-2, line)
		}
		c := code.FindString(strings.TrimSpace(cols[2]))
		if c == "" {
			continue // header and separator
		}
		rows++
		var reasons []string
		for _, m := range reason.FindAllStringSubmatch(cols[4], -1) {
			doc = append(doc, c+" "+m[1])
			reasons = append(reasons, m[1])
		}
		if len(cols) < 7 {
			t.Errorf("%s: error table row has no HTTP column: %s", errorsDoc, line)
			continue
		}
		checkDocHTTP(t, c, reasons, strings.TrimSpace(cols[5]))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatalf("%s has no error table under ## Codes and reasons", errorsDoc)
	}
	var want []string
	for r, kinds := range reasonKinds {
		for _, k := range kinds {
			want = append(want, fmt.Sprintf("%d %s", k.Code(), r))
		}
	}
	sort.Strings(doc)
	doc = compactStrings(doc)
	sort.Strings(want)
	want = compactStrings(want)
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("%s error table vs host/fault (-code +doc):\n%s", errorsDoc, diff)
	}
}

// checkDocHTTP checks the HTTP cell of the error table's row of code whose
// reasons are listed: "<kind's status>[; <status> `reason`, …]".
func checkDocHTTP(t *testing.T, code string, reasons []string, cell string) {
	t.Helper()
	k, ok := Kind(0), false
	for _, x := range Kinds() {
		if strconv.Itoa(x.Code()) == code && len(reasons) > 0 && Declared(reasons[0], x) {
			k, ok = x, true
		}
	}
	if !ok {
		t.Errorf("error table row %s: no kind declares its first reason", code)
		return
	}
	want := strconv.Itoa(k.HTTPStatus())
	var own []string
	for _, r := range reasons {
		if rule := reasonRules[r]; rule.http != 0 && Declared(r, k) {
			own = append(own, fmt.Sprintf("%d `%s`", rule.http, r))
		}
	}
	got := regexp.MustCompile(`^\d{3}`).FindString(cell)
	gotOwn := regexp.MustCompile("\\d{3} `[a-z_]+`").FindAllString(cell, -1)
	if got != want || !cmp.Equal(own, gotOwn, cmpopts.EquateEmpty()) {
		t.Errorf("error table row %s (%v): HTTP %q, want %s then %v", code, k, cell, want, own)
	}
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// TestReasonsOnlyFromFault walks the host's and the CLI's code: no package
// but fault declares a Reason* string constant, and every fault.New, Newf,
// Wrap or fault.Error literal names its reason with a fault.Reason* constant
// (or passes one through a variable) that reasonKinds lists for its kind.
func TestReasonsOnlyFromFault(t *testing.T) {
	t.Parallel()
	names := declaredReasons(t)
	kinds := map[string]Kind{}
	for k := Kind(0); k < numKinds; k++ {
		kinds[k.String()] = k
	}
	checked := 0
	for _, root := range []string{"..", "../../cmd", "../../examples"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || path == "../fault" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			checked += checkFile(t, path, names, kinds)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 50 {
		t.Errorf("only %d fault constructions found: is the walk looking in the right place?", checked)
	}
}

// checkFile checks one file and returns how many constructions it saw.
func checkFile(t *testing.T, path string, names map[string]string, kinds map[string]Kind) int {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkgConsts := map[string]bool{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, n := range spec.(*ast.ValueSpec).Names {
				pkgConsts[n.Name] = true
				if strings.HasPrefix(n.Name, "Reason") {
					t.Errorf("%s: constant %s: declare reasons in host/fault", fset.Position(n.Pos()), n.Name)
				}
			}
		}
	}
	n := 0
	check := func(at token.Pos, kindExpr, reasonExpr ast.Expr) {
		n++
		pos := fset.Position(at)
		switch r := reasonExpr.(type) {
		case *ast.Ident:
			if pkgConsts[r.Name] {
				t.Errorf("%s: reason %s is a local constant; use a fault.Reason* constant", pos, r.Name)
			}
		case *ast.SelectorExpr:
			x, ok := r.X.(*ast.Ident)
			value, declared := names[r.Sel.Name]
			if !ok || x.Name != "fault" || !declared {
				t.Errorf("%s: reason %s is not a fault.Reason* constant", pos, exprString(reasonExpr))
				return
			}
			if ks, ok := kindExpr.(*ast.SelectorExpr); ok {
				if k, known := kinds[ks.Sel.Name]; known && !hasKind(reasonKinds[value], k) {
					t.Errorf("%s: reason %q with kind %v: add the pair to reasonKinds and the error table of docs/reference/errors.md", pos, value, k)
				}
			}
		default:
			t.Errorf("%s: reason %s: use a fault.Reason* constant", pos, exprString(reasonExpr))
		}
	}
	ast.Inspect(f, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok || len(x.Args) < 2 {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "fault" {
				switch sel.Sel.Name {
				case "New", "Newf", "Wrap":
					check(x.Pos(), x.Args[0], x.Args[1])
				}
			}
		case *ast.CompositeLit:
			sel, ok := x.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Error" {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "fault" {
				return true
			}
			var kind, reason ast.Expr
			for _, el := range x.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch kv.Key.(*ast.Ident).Name {
				case "Kind":
					kind = kv.Value
				case "Reason":
					reason = kv.Value
				}
			}
			if reason != nil {
				check(x.Pos(), kind, reason)
			}
		}
		return true
	})
	return n
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.BasicLit:
		return x.Value
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return fmt.Sprintf("%T", e)
}
