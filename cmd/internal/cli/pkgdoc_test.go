package cli

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxPackageDocLines is the longest a package doc comment may be: a
// paragraph saying what the package owns and where its essay is in docs/.
const maxPackageDocLines = 12

// packageDocProblems returns what is wrong with the package comments of the
// package at path (in the module) named name, given its parsed files: none at all, one in more
// than one file (go doc joins them), one that does not start
// "Package <name> " ("Command <binary> " for a main package), or one longer
// than maxPackageDocLines, each naming the file and its length.
func packageDocProblems(fset *token.FileSet, path, name string, files []*ast.File) []string {
	var problems []string
	var found []string
	for _, f := range files {
		if f.Doc == nil {
			continue
		}
		file := fset.Position(f.Package).Filename
		found = append(found, file)
		text := f.Doc.Text()
		if ok := strings.HasPrefix(text, "Package "+name+" ") || strings.HasPrefix(text, "Package "+name+"\n"); !ok &&
			!(name == "main" && commandDoc.MatchString(text)) {
			first, _, _ := strings.Cut(text, "\n")
			problems = append(problems, fmt.Sprintf("%s: package comment starts %q, not \"Package %s\"", file, first, name))
		}
		lines := fset.Position(f.Doc.End()).Line - fset.Position(f.Doc.Pos()).Line + 1
		if lines > maxPackageDocLines {
			problems = append(problems, fmt.Sprintf("%s: package comment is %d lines; keep at most %d (what the package owns, and the docs/ file holding the rest)",
				file, lines, maxPackageDocLines))
		}
	}
	switch {
	case len(found) == 0:
		problems = append(problems, fmt.Sprintf("%s: package %s has no package comment: say what it owns in a doc.go", path, name))
	case len(found) > 1:
		problems = append(problems, fmt.Sprintf("%s: package %s has a package comment in %d files (%s): keep one", path, name, len(found), strings.Join(found, ", ")))
	}
	return problems
}

// commandDoc is how a main package's comment starts: "Command <binary> ...".
var commandDoc = regexp.MustCompile(`^Command [a-z][a-z0-9-]* `)

// TestPackageDocsAreAParagraph holds every package of the module to a
// package comment that says what the package owns in one paragraph; the
// protocol, format and design essays live in docs/, where a reader looks.
func TestPackageDocsAreAParagraph(t *testing.T) {
	lines := goList(t, `{{.ImportPath}}|{{.Name}}|{{.Dir}}|{{join .GoFiles " "}} {{join .CgoFiles " "}} {{join .IgnoredGoFiles " "}}`, module+"...")
	for _, line := range lines {
		parts := strings.SplitN(line, "|", 4)
		pkg, name, dir := strings.TrimPrefix(parts[0], module), parts[1], parts[2]
		fset := token.NewFileSet()
		var files []*ast.File
		for _, base := range strings.Fields(parts[3]) {
			if strings.HasSuffix(base, "_test.go") {
				continue
			}
			src, err := os.ReadFile(filepath.Join(dir, base))
			if err != nil {
				t.Fatal(err)
			}
			// Named by its path in the repository, as the failure shows it.
			f, err := parser.ParseFile(fset, pkg+"/"+base, src, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Errorf("%s/%s: %v", pkg, base, err)
				continue
			}
			if f.Name.Name == name { // an ignored file may be another program (//go:build ignore)
				files = append(files, f)
			}
		}
		for _, p := range packageDocProblems(fset, pkg, name, files) {
			t.Error(p)
		}
	}
}

// TestPackageDocProblemsRefuses checks the checker itself on comments it
// must refuse, and on ones it must pass.
func TestPackageDocProblemsRefuses(t *testing.T) {
	long := "// Package x owns a thing.\n" + strings.Repeat("//\n// more\n", 6) + "package x\n"
	for _, c := range []struct {
		name, src string
		second    string // another file of the package, if any
		want      string // "" when the comment passes
	}{
		{"x", "// Package x owns a thing.\npackage x\n", "", ""},
		{"x", "// Package x owns a thing.\npackage x\n", "package x\n", ""},
		{"x", "// Package x owns a thing.\npackage x\n", "// Package x owns more.\npackage x\n", "package comment in 2 files (x.go, y.go)"},
		{"x", "/*\nPackage x owns a thing.\n*/\npackage x\n", "", ""},
		{"main", "// Command drama-tokenizer writes a tokenizer.\npackage main\n", "", ""},
		{"x", "package x\n", "", "has no package comment"},
		{"x", "// Package y owns a thing.\npackage x\n", "", `starts "Package y owns a thing.", not "Package x"`},
		{"x", "// Packages x own things.\npackage x\n", "", "not \"Package x\""},
		{"main", "// Runs things.\npackage main\n", "", "not \"Package main\""},
		{"x", long, "", "x.go: package comment is 13 lines; keep at most 12"},
		{"x", "/*\nPackage x owns a thing.\n" + strings.Repeat("more\n", 10) + "*/\npackage x\n", "", "is 13 lines"},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", c.src, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files := []*ast.File{f}
		if c.second != "" {
			g, err := parser.ParseFile(fset, "y.go", c.second, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, g)
		}
		got := strings.Join(packageDocProblems(fset, "x", c.name, files), "\n")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("package comment %q: got %q, want %q", c.src, got, c.want)
		}
	}
}
