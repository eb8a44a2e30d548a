package cli

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/drama-tts/drama/"

// layer is one row of the import table in docs/ARCHITECTURE.md: the
// packages at Path (and below it, unless a longer row matches) may import
// the standard library, the drama packages in Drama (a name ending in /...
// stands for that package and every package below it) and the third-party
// modules in Modules (by prefix); nothing else.
type layer struct {
	Path    string
	Drama   []string
	Modules []string
}

var (
	cliModules = []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/cheggaaa/pb/v3",
		"github.com/mattn/go-isatty", "github.com/hashicorp/go-hclog", "go.yaml.in/yaml/v3", "golang.org/x/sys"}
	domain = []string{"pins/...", "pth/...", "safetensors/...", "voices/...", "engine/..."}
	// leaves import the standard library alone (atomicfile: and proc), and
	// every package may import them: atomic files, the model's facts, what
	// /proc/PID/stat says of a process, a pause that gives way to a
	// context, the escaping of outside text for printing, and the redirect
	// policy that keeps a credential with its origin.
	leaves = []string{"internal/atomicfile", "internal/model", "internal/proc", "internal/wait", "internal/safetext", "internal/httpsafe"}
)

// layers is the import table. Keep it in step with docs/ARCHITECTURE.md.
var layers = []layer{
	{"cmd/drama", append([]string{"cmd/internal/..."}, domain...), nil},                                                                    // main imports cli alone; its end-to-end tests use fixtures
	{"cmd/internal", append([]string{"cmd/internal/...", "internal/connlimit", "internal/emutest"}, domain...), cliModules},                // emutest: realclient, tests only
	{"cmd/internal/cmdutil/cmdtest", []string{"cmd/internal/cmdutil", "cmd/internal/cmdutil/cmdtest"}, []string{"github.com/spf13/cobra"}}, // tests only
	{"pins", nil, []string{"golang.org/x/sys"}},                                                                                            // mapped reads for hashing
	{"internal/atomicfile", []string{"internal/proc"}, []string{"golang.org/x/sys"}},                                                       // an owner's start time names its temporaries; sync_file_range starts writeback
	{"internal/proc", nil, nil},
	{"internal/wait", nil, nil},
	{"internal/hostcheck", nil, nil}, // the Host check drama serve and drama mirror serve share
	{"internal/connlimit", nil, nil}, // the connection bound of drama serve and drama mirror serve
	{"internal/safetext", nil, nil},
	{"internal/httpsafe", nil, nil},
	{"internal/emutest", nil, nil}, // tests only
	{"internal/model", nil, nil},
	{"pins/hub", []string{"pins", "pins/hub", "pins/hub/mirror", "internal/hostcheck"}, []string{"golang.org/x/sys"}},
	{"pth", nil, []string{"github.com/nlpodyssey/gopickle"}},
	{"pth/convert", []string{"pth", "safetensors", "safetensors/dtype"}, []string{"golang.org/x/sys"}},
	{"safetensors", []string{"safetensors/..."}, []string{"github.com/x448/float16"}},
	{"voices", []string{"voices/..."}, []string{"golang.org/x/text"}},
	{"voices/store", []string{"voices"}, []string{"github.com/fsnotify/fsnotify"}}, // inotify on Linux, kqueue on macOS, cancellable
	{"engine", []string{"engine/enginepb", "voices"}, []string{"github.com/hashicorp/go-plugin",
		"github.com/hashicorp/go-hclog", "google.golang.org/grpc", "google.golang.org/protobuf", "golang.org/x/sys"}},
	{"engine/enginepb", nil, []string{"google.golang.org/grpc", "google.golang.org/protobuf"}},
	{"engine/host", []string{"engine"}, []string{"github.com/hashicorp/go-plugin", "github.com/hashicorp/go-hclog"}},
	{"engine/enginetest", []string{"engine", "engine/host", "internal/emutest"}, []string{"github.com/hashicorp/go-plugin"}}, // WaitFor's deadline scales under emulation
	{"engine/native", []string{"engine", "engine/native", "engine/native/standin"}, []string{"github.com/hashicorp/go-hclog", "golang.org/x/sys"}},
	{"engine/native/nativetest", []string{"engine/..."}, nil},
	{"engine/prompt", []string{"voices", "engine/prompt", "engine/prompt/prompttest"}, []string{"github.com/dlclark/regexp2",
		"github.com/sugarme/tokenizer", "golang.org/x/text"}},
	{"engine/httpapi", []string{"engine", "engine/prompt", "engine/pool", "engine/supervise", "engine/httpapi/webui", "engine/httpapi/apikey", "engine/httpapi/upload", "voices/...", "internal/hostcheck"}, []string{"github.com/go-json-experiment/json", "github.com/vmihailenco/msgpack/v5", "github.com/coder/websocket", "golang.org/x/sys"}},
	{"engine/httpapi/apikey", nil, nil}, // the key file and the check of a key: the standard library alone
	{"engine/serve", []string{"engine", "engine/host", "engine/native", "engine/supervise", "engine/pool", "engine/clone", "engine/prompt",
		"engine/httpapi", "engine/httpapi/apikey", "engine/qualify", "voices/...", "internal/connlimit"}, []string{"github.com/hashicorp/go-hclog"}}, // drama serve's assembly
	{"engine/bench", []string{"engine", "engine/native", "voices/transcribe"}, []string{"gonum.org/v1/plot"}}, // transcribes replies for the word error rate
	{"engine/qualify", []string{"engine/bench", "pins", "voices/transcribe"}, nil},                            // its tests give the bench a transcriber
	{"engine/supervise", []string{"engine"}, nil},
	{"engine/pool", []string{"engine", "engine/supervise"}, nil},
	{"engine/clone", []string{"engine", "voices", "voices/clip"}, nil},
	{"engine/build", []string{"pins", "engine/build/..."}, nil},
	{"plugins", []string{"engine/..."}, nil},
	{"scripts", domain, nil},
	{"scripts/hash-variants", []string{"pins"}, []string{"golang.org/x/sys"}}, // times pins.HashFile against other ways of reading
}

// under reports whether pkg is p or below it.
func under(pkg, p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }

// layerOf returns the longest row whose Path holds pkg.
func layerOf(pkg string) (layer, bool) {
	var best layer
	found := false
	for _, l := range layers {
		if under(pkg, l.Path) && (!found || len(l.Path) > len(best.Path)) {
			best, found = l, true
		}
	}
	return best, found
}

func allowed(l layer, pkg, imp string) bool {
	if rel, ok := strings.CutPrefix(imp, module); ok {
		if slices.Contains(leaves, rel) && !slices.Contains(leaves, pkg) {
			return true
		}
		return slices.ContainsFunc(l.Drama, func(p string) bool {
			if tree, ok := strings.CutSuffix(p, "/..."); ok {
				return under(rel, tree)
			}
			return rel == p
		})
	}
	if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
		return true // the standard library
	}
	return slices.ContainsFunc(l.Modules, func(m string) bool { return imp == m || strings.HasPrefix(imp, m+"/") })
}

// testHelper reports whether imp is one of drama's test-helper packages
// (enginetest, nativetest, hubtest, ...) or the stand-in engine, which any
// package's tests may use.
func testHelper(imp string) bool {
	rel, ok := strings.CutPrefix(imp, module)
	return ok && (strings.HasSuffix(rel, "test") || rel == "engine/native/standin") && !strings.HasPrefix(rel, "cmd/")
}

// TestImportTable holds the import table over every package of the module,
// tests included: each package must fall under a row, and import only what
// its row allows. Domain packages therefore never reach cobra, pb or cmd/.
func TestImportTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-test=false", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`,
		module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 40 {
		t.Fatalf("go list named %d packages; want the whole module", len(lines))
	}
	for _, line := range lines {
		parts := strings.SplitN(line, "|", 3)
		pkg := strings.TrimPrefix(parts[0], module)
		l, ok := layerOf(pkg)
		if !ok {
			t.Errorf("%s falls under no row of the import table: add one (cmd/internal/cli/layering_test.go and docs/ARCHITECTURE.md)", pkg)
			continue
		}
		for _, imp := range strings.Fields(parts[1]) {
			if !allowed(l, pkg, imp) {
				t.Errorf("%s imports %s, which its row (%s) does not allow", pkg, imp, l.Path)
			}
		}
		for _, imp := range strings.Fields(parts[2]) {
			if imp != parts[0] && !allowed(l, pkg, imp) && !testHelper(imp) {
				t.Errorf("%s's tests import %s, which its row (%s) does not allow", pkg, imp, l.Path)
			}
		}
	}
}

// TestImportTableRefuses checks the table's checker itself on imports it
// must refuse.
func TestImportTableRefuses(t *testing.T) {
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
	} {
		l, ok := layerOf(c[0])
		if !ok || allowed(l, c[0], c[1]) {
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
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-test=false", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`,
		module+"cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
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
