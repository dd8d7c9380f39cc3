package hostfn

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuestCodesFromFault: every code a host function answers a guest with
// is one of host/fault's guest ABI codes: errorf is always called with a
// fault.Guest* constant, and no guestError names a code of its own (the
// one variable code, agentError's, is the failure's reason or the called
// plugin's code).
func TestGuestCodesFromFault(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "errorf" && len(n.Args) > 0 {
					calls++
					if !isGuestCode(n.Args[0]) {
						t.Errorf("%s: errorf with code %s: use a fault.Guest* code", fset.Position(n.Pos()), exprString(n.Args[0]))
					}
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); !ok || id.Name != "guestError" {
					return true
				}
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok || exprString(kv.Key) != "Code" {
						continue
					}
					if _, lit := kv.Value.(*ast.BasicLit); lit || (!isGuestCode(kv.Value) && exprString(kv.Value) != "code") {
						t.Errorf("%s: guestError with code %s: use a fault.Guest* code", fset.Position(kv.Pos()), exprString(kv.Value))
					}
				}
			}
			return true
		})
	}
	if calls < 30 {
		t.Errorf("only %d errorf calls found: is the test looking at the right files?", calls)
	}
}

func isGuestCode(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "fault" && strings.HasPrefix(sel.Sel.Name, "Guest")
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.BasicLit:
		return e.Value
	}
	return "?"
}
