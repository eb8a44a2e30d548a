package build_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/internal/filehash"
)

// TestPinnedSHA256 reads the sha256 an engine binary is held to: from the
// engine.sha256 beside a binary Install put under the root (which must be
// there and name it), else from the root's own record (none: no check).
// Every record that does not give the digest is a *RecordError naming the
// file, a mismatch, and leaves the command to say how to mend it.
func TestPinnedSHA256(t *testing.T) {
	root := t.TempDir()
	dir := build.Dir(root, "nvfp4")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tensorfold-native")
	sums := filepath.Join(dir, build.SumsName)
	ab, cd := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	write := func(p, data string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string, err error, path, variant, says string) {
		t.Helper()
		var re *build.RecordError
		if !errors.As(err, &re) || re.Path != path || re.Variant != variant ||
			!errors.Is(err, build.ErrBadRecord) || !errors.Is(err, build.ErrMismatch) ||
			!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v; want a *RecordError of %s (variant %q) saying %q", what, err, path, variant, says)
			return
		}
		if strings.Contains(err.Error(), "drama ") {
			t.Errorf("%s: %v: the command that mends it is the command's to say", what, err)
		}
	}

	_, err := build.PinnedSHA256(root, bin)
	refused("no record beside an installed binary", err, sums, "nvfp4", "no such file")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no record beside an installed binary: %v, want os.ErrNotExist", err)
	}
	write(sums, cd+"  drama3-voice\n")
	_, err = build.PinnedSHA256(root, bin)
	refused("a record without the binary", err, sums, "nvfp4", "no sha256 for tensorfold-native")
	write(sums, cd+"  drama3-voice\n"+ab+"  tensorfold-native\x1b]0;owned\a\n")
	_, err = build.PinnedSHA256(root, bin)
	refused("a control character in a name", err, sums, "nvfp4", "line 2: ")
	if !errors.Is(err, filehash.ErrSumsFormat) {
		t.Errorf("a control character in a name: %v, want filehash.ErrSumsFormat", err)
	}
	write(sums, ab+"  tensorfold-native\n"+cd+"  tensorfold-native\n")
	_, err = build.PinnedSHA256(root, bin)
	refused("the binary named twice", err, sums, "nvfp4", "line 2: ")
	write(sums, cd+"  drama3-voice\n"+strings.ToUpper(ab)+" *tensorfold-native\n")
	if sum, err := build.PinnedSHA256(root, bin); err != nil || sum != ab {
		t.Errorf("an installed binary's record: %q, %v; want %s", sum, err, ab)
	}

	// Any other binary, or none, is held to the root's record, if any.
	rootSums := build.RootSums(root)
	if rootSums != filepath.Join(root, "engine", build.SumsName) {
		t.Errorf("RootSums: %s", rootSums)
	}
	for _, other := range []string{"", filepath.Join(root, "engine", "tensorfold-native"), "/opt/engine/tensorfold-native"} {
		if sum, err := build.PinnedSHA256(root, other); err != nil || sum != "" {
			t.Errorf("%q without the root's record: %q, %v; want no check", other, sum, err)
		}
	}
	write(rootSums, "")
	_, err = build.PinnedSHA256(root, "")
	refused("an empty root record", err, rootSums, "", "no sha256 in it")
	write(rootSums, "nonsense\n")
	_, err = build.PinnedSHA256(root, "/opt/engine/tensorfold-native")
	refused("a root record that is not sha256sum's", err, rootSums, "", "line 1: ")
	write(rootSums, cd+"  /opt/engine/tensorfold-native\n"+ab+"  /opt/engine/drama3-voice\n")
	if sum, err := build.PinnedSHA256(root, filepath.Join(root, "engine", "tensorfold-native")); err != nil || sum != cd {
		t.Errorf("the root's record: %q, %v; want its first line's %s", sum, err, cd)
	}
}

// TestCheckMalformedSums: an engine.sha256 that is not in sha256sum's
// format disagrees with every binary, and the detail says where.
func TestCheckMalformedSums(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tensorfold-native")
	if err := os.WriteFile(bin, []byte("engine"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, _, err := filehash.SHA256(t.Context(), bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &build.Record{Binaries: []build.BinaryRecord{{Name: "tensorfold-native", Size: 6, SHA256: sum}}}
	sums := filepath.Join(dir, build.SumsName)
	os.WriteFile(sums, []byte(sum+"  tensorfold-native\n"), 0o644)
	if st, err := build.Check(dir, rec); err != nil || len(st) != 1 || st[0].State != build.StateOK || st[0].Got != sum {
		t.Fatalf("a good record: %+v, %v", st, err)
	}
	os.WriteFile(sums, []byte(sum+"  tensorfold-native\n"+sum[:60]+"  drama3-voice\n"), 0o644)
	st, err := build.Check(dir, rec)
	if err != nil || len(st) != 1 || st[0].State != build.StateChanged || !strings.Contains(st[0].Detail, sums+" line 2: ") {
		t.Errorf("a malformed engine.sha256: %+v, %v; want the binary changed, the detail naming line 2", st, err)
	}
}
