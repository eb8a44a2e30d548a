package host

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestSearchDirs(t *testing.T) {
	s := Search{Flag: "/a", Env: "/b" + string(os.PathListSeparator) + "/a" + string(os.PathListSeparator) + "/c", Exe: "/d/drama", Root: "/r"}
	var got []string
	for _, d := range s.Dirs() {
		got = append(got, d.Path+"="+d.Source)
	}
	want := []string{"/a=--plugin-dir", "/b=$DRAMA_PLUGIN_DIR", "/c=$DRAMA_PLUGIN_DIR", "/d=beside drama", filepath.Clean("/r/plugins") + "=root"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Dirs = %v, want %v", got, want)
	}
	if len((Search{}).Dirs()) != 0 {
		t.Fatal("empty Search gives dirs")
	}
}

func TestDiscover(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("names differ")
	}
	a, b := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(a, "drama-engine-cuda"))
	touch(t, filepath.Join(a, "drama-engine-cuda.sha256"))
	touch(t, filepath.Join(a, "drama-engine-Bad"))
	touch(t, filepath.Join(a, "other"))
	os.Mkdir(filepath.Join(a, "drama-engine-dir"), 0o755)
	touch(t, filepath.Join(b, "drama-engine-cuda"))
	touch(t, filepath.Join(b, "drama-engine-metal"))
	dirs := []Dir{{a, SourceFlag}, {filepath.Join(a, "missing"), SourceEnv}, {b, SourceRoot}}
	got, err := Discover(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "cuda" || got[1].Name != "metal" {
		t.Fatalf("Discover = %+v", got)
	}
	if got[0].Path != filepath.Join(a, "drama-engine-cuda") || got[0].Source != SourceFlag || len(got[0].Shadowed) != 1 {
		t.Errorf("cuda = %+v, want the first directory's, shadowing the second's", got[0])
	}
	if c, err := Find(dirs, "metal"); err != nil || c.Source != SourceRoot {
		t.Errorf("Find(metal) = %+v, %v", c, err)
	}
	if _, err := Find(dirs, "rocm"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "drama-engine-rocm") {
		t.Errorf("Find(rocm) err = %v", err)
	}
	if _, err := Find(dirs, "../x"); err == nil {
		t.Error("Find accepted a bad name")
	}
}

func TestPluginName(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("names differ")
	}
	for file, want := range map[string]string{
		"drama-engine-cuda": "cuda", "drama-engine-my_gpu-2": "my_gpu-2",
		"drama-engine-": "", "drama-engine-x.sha256": "", "drama": "", "drama-engine-CUDA": "",
	} {
		got, ok := PluginName(file)
		if got != want || ok != (want != "") {
			t.Errorf("PluginName(%q) = %q, %v; want %q", file, got, ok, want)
		}
	}
}

func TestParseChecksum(t *testing.T) {
	sum := strings.Repeat("0f", 32)
	for _, ok := range []string{
		sum + "  drama-engine-x\n",
		sum + " *drama-engine-x\n",
		sum + "  bin/drama-engine-x\r\n",
		"\n" + strings.Repeat("aa", 32) + "  drama-engine-y\n" + sum + "  drama-engine-x\n",
	} {
		got, err := parseChecksum("/p/drama-engine-x", []byte(ok))
		if err != nil || len(got) != 32 || got[0] != 0x0f {
			t.Errorf("parse %q = %x, %v", ok, got, err)
		}
	}
	for _, bad := range []string{"", sum, sum[:63] + "  drama-engine-x", strings.Repeat("zz", 32) + "  drama-engine-x", sum + "  ",
		// The line naming the binary is not the only one read: a second
		// line for it, or a terminal escape on another, spoils the file.
		sum + "  drama-engine-x\n" + strings.Repeat("aa", 32) + "  drama-engine-x\n",
		sum + "  drama-engine-x\n" + strings.Repeat("aa", 32) + "  drama-engine-y\x1b[2J\n"} {
		_, err := parseChecksum("/p/drama-engine-x", []byte(bad))
		if !errors.Is(err, ErrChecksumMalformed) {
			t.Errorf("parse %q err = %v, want malformed", bad, err)
		}
	}
}

func FuzzParseChecksum(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.sha256"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(strings.Repeat("0f", 32) + "  drama-engine-x\n"))
	f.Add([]byte("garbage"))
	f.Add([]byte(strings.Repeat("ab", 32) + " *drama-engine-x\r\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sum, err := parseChecksum("/d/drama-engine-cuda", data)
		if err == nil && len(sum) != 32 {
			t.Fatalf("digest of %d bytes accepted", len(sum))
		}
		if err != nil && StatusOf(err) != ChecksumMalformed {
			t.Fatalf("status %v for %v", StatusOf(err), err)
		}
	})
}
