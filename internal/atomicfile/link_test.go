package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinksReplaceThroughOwnedTemporaries: Symlink and Link replace what is
// at the path, leave no temporary, and sweep a dead run's temporary for the
// path (one named by a pid that no longer runs), never a fixed name two
// runs would share.
func TestLinksReplaceThroughOwnedTemporaries(t *testing.T) {
	dir := t.TempDir()
	blob := filepath.Join(dir, "blob")
	if err := os.WriteFile(blob, []byte("bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	sym, hard := filepath.Join(dir, "sym"), filepath.Join(dir, "hard")
	os.WriteFile(sym, []byte("old"), 0o644)
	dead := filepath.Join(dir, ".sym"+Marker+"999999999-1-1")
	os.WriteFile(dead, nil, 0o644)
	if err := Symlink("blob", sym); err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(sym); err != nil || got != "blob" {
		t.Fatalf("symlink: %q %v", got, err)
	}
	if err := Link(blob, hard); err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(blob)
	b, _ := os.Stat(hard)
	if !os.SameFile(a, b) {
		t.Fatal("Link made another file")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), Marker) || strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left %s", e.Name())
		}
	}
}
