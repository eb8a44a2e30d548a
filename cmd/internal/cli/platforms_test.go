package cli

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeBuild is one compilation of every package of the module, tests
// included, that make test or make test-arm64 does. makeLine, when set, is
// the Makefile line that does it.
type treeBuild struct {
	goos, goarch string
	cgo          bool
	tags         []string
	makeLine     string
}

// treeBuilds are the builds make test and make test-arm64 (which .ci/run
// runs after it) do: vet and the race detector's test run on the host
// (linux/amd64, with cgo), the test run on linux/arm64 under emulation
// (cross-compiled, so without cgo), and vet on darwin/arm64 (likewise).
var treeBuilds = []treeBuild{
	{"linux", "amd64", true, nil, ""},
	{"linux", "amd64", true, []string{"race"}, ""},
	{"linux", "arm64", false, nil, "GOARCH=arm64 DRAMA_TEST_TIME_SCALE=$(ARM64_TIME_SCALE) DRAMA_SKIP_LOG=$$log $(GO) test -exec qemu-aarch64"},
	{"darwin", "arm64", false, nil, "GOOS=darwin GOARCH=arm64 $(GO) vet ./..."},
}

// shipped are the systems a file may be meant for: Linux and macOS, on
// both architectures, with cgo or without, with the race detector or not.
func shipped() []build.Context {
	var out []build.Context
	for _, goos := range []string{"linux", "darwin"} {
		for _, goarch := range []string{"amd64", "arm64"} {
			for _, cgo := range []bool{false, true} {
				for _, tags := range [][]string{nil, {"race"}} {
					out = append(out, buildContext(goos, goarch, cgo, tags))
				}
			}
		}
	}
	return out
}

func buildContext(goos, goarch string, cgo bool, tags []string) build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled, c.BuildTags = goos, goarch, cgo, tags
	return c
}

// unbuilt returns the Go files under root that one of the systems in
// shipped would compile and none of builds does.
func unbuilt(t *testing.T, root string, builds []treeBuild) []string {
	t.Helper()
	var ctxs []build.Context
	for _, b := range builds {
		ctxs = append(ctxs, buildContext(b.goos, b.goarch, b.cgo, b.tags))
	}
	matches := func(c build.Context, dir, name string) bool {
		ok, err := c.MatchFile(dir, name)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Join(dir, name), err)
		}
		return ok
	}
	var missed []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		dir := filepath.Dir(path)
		if !slices.ContainsFunc(shipped(), func(c build.Context) bool { return matches(c, dir, name) }) {
			return nil // windows, or no system at all
		}
		if !slices.ContainsFunc(ctxs, func(c build.Context) bool { return matches(c, dir, name) }) {
			rel, _ := filepath.Rel(root, path)
			missed = append(missed, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return missed
}

// TestEveryFileIsBuilt: every Go file that Linux or macOS would compile,
// tests included, is compiled by one of make test's builds (or
// test-arm64's): a file for darwin alone is type-checked by the
// darwin/arm64 vet, so it cannot break unseen. A file for darwin/amd64
// alone, or for darwin with cgo (cross-builds have none), fails here.
func TestEveryFileIsBuilt(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, f := range unbuilt(t, root, treeBuilds) {
		t.Errorf("%s is compiled by none of make test's builds (linux/amd64, linux/arm64 and darwin/arm64 without cgo): give it a build constraint one of them meets", f)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range treeBuilds {
		if b.makeLine != "" && !strings.Contains(string(makefile), b.makeLine) {
			t.Errorf("the Makefile has no %q: the %s/%s build is gone", b.makeLine, b.goos, b.goarch)
		}
	}
}

// TestEveryFileIsBuiltRefuses checks the check on files it must report.
func TestEveryFileIsBuiltRefuses(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"a.go":              "package a\n",
		"a_darwin.go":       "package a\n",
		"a_windows.go":      "package a\n",
		"a_darwin_amd64.go": "package a\n",
		"cgo_test.go":       "//go:build darwin && cgo\n\npackage a\n",
		"mac.go":            "//go:build darwin\n\npackage a\n",
		"testdata/x.go":     "//go:build darwin && amd64\n\npackage x\n",
	}
	for name, src := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := unbuilt(t, root, treeBuilds)
	slices.Sort(got)
	if want := []string{"a_darwin_amd64.go", "cgo_test.go"}; !slices.Equal(got, want) {
		t.Errorf("unbuilt = %q, want %q", got, want)
	}
	got = unbuilt(t, root, treeBuilds[:3]) // without the darwin vet
	slices.Sort(got)
	if want := []string{"a_darwin.go", "a_darwin_amd64.go", "cgo_test.go", "mac.go"}; !slices.Equal(got, want) {
		t.Errorf("without darwin/arm64: unbuilt = %q, want %q", got, want)
	}
}
