package cli

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/drama-tts/drama/"

// importsFormat is go list's format for a package's path and imports: its
// own, then its tests'.
const importsFormat = `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`

// goList returns go list's line per package of pattern, in format; it
// skips the test under -short (go list takes a while). The whole module
// must name at least 40 packages, so a list cut short fails.
func goList(t *testing.T, format, pattern string) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", format, pattern).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if pattern == module+"..." && len(lines) < 40 {
		t.Fatalf("go list named %d packages; want the whole module", len(lines))
	}
	return lines
}

// architectureDoc is the file whose import table TestImportTable holds:
// the table there is the only copy.
const architectureDoc = "../../../docs/ARCHITECTURE.md"

// layer is one row of the import table in docs/ARCHITECTURE.md: the
// packages at each of Paths (and below it, unless a longer row names them)
// may import the standard library, the leaves, the drama packages in Drama
// (a name ending in /... stands for that package and every package below
// it) and the third-party modules in Modules (by prefix); nothing else.
type layer struct {
	Paths   []string
	Drama   []string
	Modules []string
	Line    int // the row's line in architectureDoc
}

// importTable is the import table as docs/ARCHITECTURE.md writes it.
type importTable struct {
	Layers      []layer
	Leaves      []string // every package may import these
	TestHelpers []string // every package's tests may import these
}

var (
	tableOnce sync.Once
	table     importTable
	tableErr  error
	backticks = regexp.MustCompile("`([^`]+)`")
)

// leavesLine starts the line of architectureDoc that names the leaves,
// and helpersLine the line that names the test helpers.
const (
	leavesLine  = "Leaves, which every package may import:"
	helpersLine = "Test helpers, which the tests of every package may import:"
)

// loadTable reads the import table from docs/ARCHITECTURE.md once: the
// rows of the table after the heading "## What may import what", each
// cell's backquoted names (packages; drama packages; module paths; the
// fourth cell says why), and the leaves from the line starting leavesLine.
func loadTable(t *testing.T) importTable {
	t.Helper()
	tableOnce.Do(func() { table, tableErr = parseTable(architectureDoc) })
	if tableErr != nil {
		t.Fatalf("%s: %v", architectureDoc, tableErr)
	}
	return table
}

func parseTable(path string) (importTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return importTable{}, err
	}
	defer f.Close()
	var tab importTable
	in, rows := false, 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## What may import what"
			continue
		}
		if !in {
			continue
		}
		if rest, ok := strings.CutPrefix(line, leavesLine); ok {
			tab.Leaves = names(rest)
			continue
		}
		if rest, ok := strings.CutPrefix(line, helpersLine); ok {
			tab.TestHelpers = names(rest)
			continue
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		rows++
		if rows <= 2 {
			continue // the header and its rule
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			return importTable{}, fmt.Errorf("line %d: a row has 4 cells (packages | may import (drama) | may import (modules) | why), this one %d", n, len(cells))
		}
		l := layer{Paths: names(cells[0]), Drama: names(cells[1]), Modules: names(cells[2]), Line: n}
		if len(l.Paths) == 0 {
			return importTable{}, fmt.Errorf("line %d: a row names no package", n)
		}
		tab.Layers = append(tab.Layers, l)
	}
	if err := sc.Err(); err != nil {
		return importTable{}, err
	}
	if len(tab.Layers) < 20 || len(tab.Leaves) == 0 || len(tab.TestHelpers) == 0 {
		return importTable{}, fmt.Errorf("found %d rows, %d leaves and %d test helpers under \"## What may import what\"; want the whole table and the lines %q and %q", len(tab.Layers), len(tab.Leaves), len(tab.TestHelpers), leavesLine, helpersLine)
	}
	return tab, nil
}

// names returns the backquoted names of a cell.
func names(cell string) []string {
	var out []string
	for _, m := range backticks.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// under reports whether pkg is p or below it.
func under(pkg, p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }

// layerOf returns the row with the longest path that holds pkg.
func (tab importTable) layerOf(pkg string) (layer, bool) {
	var best layer
	bestLen := -1
	for _, l := range tab.Layers {
		for _, p := range l.Paths {
			if under(pkg, p) && len(p) > bestLen {
				best, bestLen = l, len(p)
			}
		}
	}
	return best, bestLen >= 0
}

// permits returns the permission of l that lets pkg import imp: a leaf,
// a drama package of the row, a module of the row, or "std" for the
// standard library; "" when nothing does.
func (tab importTable) permits(l layer, pkg, imp string) string {
	if rel, ok := strings.CutPrefix(imp, module); ok {
		if slices.Contains(tab.Leaves, rel) && !slices.Contains(tab.Leaves, pkg) {
			return "leaf"
		}
		for _, p := range l.Drama {
			if tree, ok := strings.CutSuffix(p, "/..."); ok && under(rel, tree) || rel == p {
				return p
			}
		}
		return ""
	}
	if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
		return "std"
	}
	for _, m := range l.Modules {
		if imp == m || strings.HasPrefix(imp, m+"/") {
			return m
		}
	}
	return ""
}

// testHelper reports whether imp is one of the test helpers the table
// names (enginetest, nativetest, hubtest, the stand-in engine, ...), which
// any package's tests may import.
func (tab importTable) testHelper(imp string) bool {
	rel, ok := strings.CutPrefix(imp, module)
	return ok && slices.Contains(tab.TestHelpers, rel)
}

// TestImportTable holds docs/ARCHITECTURE.md's import table over every
// package of the module, tests included: each package must fall under a
// row and import only what its row allows, and each row must name a
// package and use every permission it gives, so the table allows what is
// used and nothing more. Domain packages therefore never reach cobra, pb
// or cmd/.
func TestImportTable(t *testing.T) {
	lines := goList(t, importsFormat, module+"...")
	tab := loadTable(t)
	used := map[int]map[string]bool{} // row line → permissions used
	helpersUsed := map[string]bool{}
	for _, line := range lines {
		parts := strings.SplitN(line, "|", 3)
		pkg := strings.TrimPrefix(parts[0], module)
		l, ok := tab.layerOf(pkg)
		if !ok {
			t.Errorf("%s falls under no row of the import table: add one to %s", pkg, architectureDoc)
			continue
		}
		if used[l.Line] == nil {
			used[l.Line] = map[string]bool{}
		}
		used[l.Line]["row"] = true
		for i, imps := range parts[1:] {
			for _, imp := range strings.Fields(imps) {
				if i == 1 && imp == parts[0] {
					continue
				}
				if i == 1 && tab.testHelper(imp) {
					helpersUsed[imp] = true
					continue
				}
				p := tab.permits(l, pkg, imp)
				used[l.Line][p] = true
				if p != "" {
					continue
				}
				what := pkg
				if i == 1 {
					what += "'s tests"
				}
				t.Errorf("%s imports %s, which its row (%s:%d) does not allow", what, imp, architectureDoc, l.Line)
			}
		}
	}
	for _, h := range tab.TestHelpers {
		if !helpersUsed[module+h] {
			t.Errorf("%s names the test helper %s, which no package's tests import: remove it", architectureDoc, h)
		}
	}
	for _, l := range tab.Layers {
		if !used[l.Line]["row"] {
			t.Errorf("%s:%d: the row %v holds no package: remove it", architectureDoc, l.Line, l.Paths)
			continue
		}
		for _, p := range append(slices.Clone(l.Drama), l.Modules...) {
			if !used[l.Line][p] {
				t.Errorf("%s:%d: the row %v allows %s, which none of its packages imports: remove it", architectureDoc, l.Line, l.Paths, p)
			}
		}
	}
}

// TestImportTableRefuses checks the table and its checker on imports it
// must refuse.
func TestImportTableRefuses(t *testing.T) {
	tab := loadTable(t)
	for _, c := range [][2]string{
		{"pins", module + "pins/hub"},
		{"pins", "github.com/spf13/cobra"},
		{"voices", module + "cmd/internal/cmdutil"},
		{"engine/httpapi", "github.com/cheggaaa/pb/v3"},
		{"engine/httpapi", module + "engine/native"},
		{"pth", module + "safetensors"},
		{"plugins/cuda", module + "cmd/internal/cli"},
		{"internal/atomicfile", module + "pins"},
		{"internal/model", module + "internal/atomicfile"},
		{"internal/proc", module + "internal/atomicfile"},
		{"internal/model", module + "internal/proc"},
		{"internal/wait", module + "internal/proc"},
		{"internal/safetext", module + "internal/wait"},
		{"internal/httpsafe", module + "internal/wait"},
		{"internal/filehash", module + "pins"},
		{"internal/filehash", module + "internal/atomicfile"},
		{"internal/safetext", module + "internal/filehash"},
	} {
		l, ok := tab.layerOf(c[0])
		if !ok || tab.permits(l, c[0], c[1]) != "" {
			t.Errorf("%s importing %s is allowed; the table must refuse it", c[0], c[1])
		}
	}
}

// commandPackage returns the command package x of cmd/internal/<x>cmd/...
// that pkg (a path inside the module) lies in, and "" for any other
// package. A package below a command's (cmd/internal/<x>cmd/...) is that
// command's; what several commands share lives beside them under a name of
// its own (cmdutil, hubaccess, benchrun, serverec, ...), for every command
// to import.
func commandPackage(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "cmd/internal/")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	if !strings.HasSuffix(first, "cmd") {
		return ""
	}
	return first
}

// siblingImportsLeft are the imports between command packages that remain
// to be moved into a package of their own: none now. An import outside
// this list fails TestCommandPackagesImportNoSibling, and so does an entry
// here that no longer occurs: the list only shrinks.
var siblingImportsLeft = []string{}

// siblingImport names an import of pkg that reaches into another command
// package, or returns "" when the import is fine.
func siblingImport(pkg, imp string, tests bool) string {
	x := commandPackage(pkg)
	imp, ok := strings.CutPrefix(imp, module)
	if x == "" || !ok {
		return ""
	}
	y := commandPackage(imp)
	if y == "" || y == x {
		return ""
	}
	if tests {
		pkg += " (tests)"
	}
	return pkg + " -> " + imp
}

// TestCommandPackagesImportNoSibling: no cmd/internal/<x>cmd package
// imports another <y>cmd package; what two commands share lives in a
// package of its own beside them, in cmdutil, or in the domain, and the command
// tree in this package puts the commands together.
func TestCommandPackagesImportNoSibling(t *testing.T) {
	seen := map[string]bool{}
	for _, line := range goList(t, importsFormat, module+"cmd/...") {
		parts := strings.SplitN(line, "|", 3)
		pkg := strings.TrimPrefix(parts[0], module)
		for i, imps := range parts[1:] {
			for _, imp := range strings.Fields(imps) {
				e := siblingImport(pkg, imp, i == 1)
				if e == "" || seen[e] {
					continue
				}
				seen[e] = true
				if !slices.Contains(siblingImportsLeft, e) {
					t.Errorf("%s: a command package imports a sibling; move what they share into a package of its own beside them (cmd/internal/<name>) or into cmdutil", e)
				}
			}
		}
	}
	for _, e := range siblingImportsLeft {
		if !seen[e] {
			t.Errorf("%s no longer occurs: remove it from siblingImportsLeft", e)
		}
	}
}

// TestSiblingImportRefuses checks the sibling rule itself.
func TestSiblingImportRefuses(t *testing.T) {
	for _, c := range []struct {
		pkg, imp string
		want     bool
	}{
		{"cmd/internal/pinscmd", module + "cmd/internal/fetchcmd", true},
		{"cmd/internal/voicecmd", module + "cmd/internal/preparecmd", true},
		{"cmd/internal/voicecmd", module + "cmd/internal/fetchcmd/shared", true},
		{"cmd/internal/upcmd", module + "cmd/internal/pinscmd/shared", true},
		{"cmd/internal/upcmd", module + "cmd/internal/hubaccess", false},
		{"cmd/internal/qualifycmd", module + "cmd/internal/benchrun", false},
		{"cmd/internal/voicecmd", module + "cmd/internal/voicecmd/shared", false},
		{"cmd/internal/voicecmd", module + "cmd/internal/cmdutil", false},
		{"cmd/internal/servecmd", module + "cmd/internal/serverec", false},
		{"cmd/internal/fetchcmd", module + "cmd/internal/realclient", false},
		{"cmd/internal/cli", module + "cmd/internal/fetchcmd", false},
		{"cmd/internal/enginecmd", module + "cmd/internal/enginecmd", false},
		{"cmd/internal/pinscmd", module + "pins/hub", false},
	} {
		if got := siblingImport(c.pkg, c.imp, false) != ""; got != c.want {
			t.Errorf("%s importing %s: sibling %v, want %v", c.pkg, c.imp, got, c.want)
		}
	}
}

// TestOnlyCmdutilConfiguresBars: bars are made by cmdutil.NewBar and
// pools started by cmdutil.StartPool, so that every bar has drama's
// template, rate and writer; no other package builds or configures pb's.
func TestOnlyCmdutilConfiguresBars(t *testing.T) {
	calls := []string{"pb.New(", "pb.New64(", "pb.NewPool(", "pb.StartNew(", "pb.Full.", "pb.Simple.", "pb.Default.", "pb.ProgressBarTemplate(", ".SetTemplate(", ".SetTemplateString(", ".SetWriter("}
	found := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		found++
		if strings.HasPrefix(filepath.ToSlash(path), "../cmdutil/") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range calls {
			if strings.Contains(string(src), c) {
				t.Errorf("%s calls %s: make bars with cmdutil.NewBar and pools with cmdutil.StartPool", path, c)
			}
		}
		return nil
	})
	if err != nil || found < 50 {
		t.Fatalf("walked %d Go files under cmd/internal: %v", found, err)
	}
}

// TestPackagesTableNamesEveryPackage: docs/ARCHITECTURE.md's table of
// what each package owns names every package of the module (a command
// package by the row `cmd/internal/<name>cmd`), and every package it
// names exists.
func TestPackagesTableNamesEveryPackage(t *testing.T) {
	pkgs := goList(t, "{{.ImportPath}}", module+"...")
	src, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Packages: what each owns"
			continue
		}
		if in && strings.HasPrefix(line, "| `") {
			for _, n := range names(strings.SplitN(line, "|", 3)[1]) {
				named[n] = true
			}
		}
	}
	exists := map[string]bool{}
	for _, p := range pkgs {
		p = strings.TrimPrefix(p, module)
		exists[p] = true
		if !named[p] && commandPackage(p) != strings.TrimPrefix(p, "cmd/internal/") {
			t.Errorf("%s is not in %s's table of what each package owns: add a row", p, architectureDoc)
		}
	}
	if len(named) < 40 {
		t.Fatalf("found %d packages named under \"## Packages: what each owns\"; want the whole table", len(named))
	}
	for n := range named {
		if !exists[n] && n != "cmd/internal/<name>cmd" {
			t.Errorf("%s's table of what each package owns names %s, which is no package: remove or rename it", architectureDoc, n)
		}
	}
}

// TestParseTableRefusesMalformedRows: a row the checker cannot read is an
// error naming its line, not a row silently dropped.
func TestParseTableRefusesMalformedRows(t *testing.T) {
	head := "# A\n\n## What may import what\n\n" + leavesLine + " `internal/proc`.\n\n" + helpersLine + " `pins/pinstest`.\n\n| packages | drama | modules | why |\n| --- | --- | --- | --- |\n"
	for name, c := range map[string]struct{ row, want string }{
		"three cells": {"| `pins` | | `golang.org/x/sys` |\n", "line 11: a row has 4 cells"},
		"no package":  {"| pins | | | |\n", "line 11: a row names no package"},
		"too short":   {"| `pins` | | | |\n", "found 1 rows"},
	} {
		path := filepath.Join(t.TempDir(), "ARCHITECTURE.md")
		if err := os.WriteFile(path, []byte(head+c.row), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := parseTable(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}
