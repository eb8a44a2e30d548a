package cli

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFunctionLines is the most lines a function of the module may have,
// counted from its func line to its closing brace, comments inside
// included. A longer one is split where its pieces have names: flag
// registration, validation, one step of a plan.
const maxFunctionLines = 80

// longFunction is a function over the limit.
type longFunction struct {
	Line  int
	Name  string
	Lines int
}

// longFunctions returns the functions of f over limit lines: declared
// functions and methods, and function literals at package level (one
// inside a declared function is within that function's bounds).
func longFunctions(fset *token.FileSet, f *ast.File, limit int) []longFunction {
	var out []longFunction
	ast.Inspect(f, func(n ast.Node) bool {
		var name string
		var body *ast.BlockStmt
		switch d := n.(type) {
		case *ast.FuncDecl:
			name, body = d.Name.Name, d.Body
			if d.Recv != nil && len(d.Recv.List) == 1 {
				name = "(" + recvType(d.Recv.List[0].Type) + ")." + name
			}
		case *ast.FuncLit:
			name, body = "func literal", d.Body
		default:
			return true
		}
		if body == nil { // declared without a body: assembly or linkname
			return false
		}
		first := fset.Position(n.Pos()).Line // the func keyword, not the doc comment
		if lines := fset.Position(body.Rbrace).Line - first + 1; lines > limit {
			out = append(out, longFunction{Line: first, Name: name, Lines: lines})
		}
		_, literal := n.(*ast.FuncLit)
		return literal // a declared function's literals are within its lines
	})
	return out
}

// recvType writes a receiver's type as it is spelled: T, *T, T[K].
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvType(t.X) + "[" + recvType(t.Index) + "]"
	case *ast.IndexListExpr:
		params := make([]string, len(t.Indices))
		for i, ix := range t.Indices {
			params[i] = recvType(ix)
		}
		return recvType(t.X) + "[" + strings.Join(params, ", ") + "]"
	}
	return fmt.Sprintf("%T", e)
}

// TestNoLongFunctions holds every function of the module to
// maxFunctionLines: each Go file but tests and generated code (.pb.go, or
// marked "Code generated ... DO NOT EDIT."), whatever its build
// constraints, in every directory the go command counts as the module's.
func TestNoLongFunctions(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module "+strings.TrimSuffix(module, "/")+"\n") {
		t.Fatalf("%s is not the module's root: %v", root, err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			// As the go command: not testdata, not a name starting with . or
			// _, not another module; and no JavaScript dependencies.
			if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".pb.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		for _, lf := range longFunctions(fset, f, maxFunctionLines) {
			t.Errorf("%s:%d: %s is %d lines, over %d: split it where its pieces have names", filepath.ToSlash(rel), lf.Line, lf.Name, lf.Lines, maxFunctionLines)
		}
		return nil
	})
	if err != nil || files < 300 {
		t.Fatalf("walked %d Go files of the module: %v", files, err)
	}
}

// TestLongFunctionsRefuses checks the counting itself: a function of the
// limit passes, one line more does not, whether a function, a method or
// a literal at package level, and comments count; a literal inside a
// function is counted with it.
func TestLongFunctionsRefuses(t *testing.T) {
	// body returns n lines of a function from its func line to its brace.
	body := func(head string, n int) string {
		return head + " {\n" + strings.Repeat("\t// a comment counts\n", n-2) + "}\n"
	}
	src := "package p\n\n// At is at the limit.\n" + body("func At()", 80) +
		body("func (s *S[K, V]) Over()", 81) +
		"var lit = " + body("func()", 90) +
		"func asm()\n" +
		body("func Short()", 3) +
		"func Outer() {\n\t_ = " + body("func()", 82) + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(longFunctions(fset, f, 80))
	want := fmt.Sprint([]longFunction{{Line: 84, Name: "(*S[K, V]).Over", Lines: 81}, {Line: 165, Name: "func literal", Lines: 90}, {Line: 259, Name: "Outer", Lines: 84}})
	if got != want {
		t.Errorf("long functions: got %s, want %s", got, want)
	}
}
