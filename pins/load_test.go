package pins

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadFor: the one loader gives each command the pins it works with:
// what the root installed (its lock file, whatever its revision), what a
// fetch installs (the built-in pins, with the lock's digests only when it
// is of their revision), and the pins as given (never completed).
func TestLoadFor(t *testing.T) {
	root := t.TempDir()
	builtin, err := Builtin("full")
	if err != nil {
		t.Fatal(err)
	}
	lock := *builtin
	lock.Files = []File{{Path: "a.safetensors", Size: 3, SHA256: strings.Repeat("a", 64)}}
	write := func(p *Pins) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, "full"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := p.WriteFile(filepath.Join(root, "full", LockFileName)); err != nil {
			t.Fatal(err)
		}
	}
	load := func(o LoadOptions) *Pins {
		t.Helper()
		p, err := Load(root, "full", o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(&lock)
	if p := load(LoadOptions{For: ForInstalled}); !p.Complete() {
		t.Error("installed: want the lock file")
	}
	if p := load(LoadOptions{For: ForFetch}); !p.Complete() || p.Revision != builtin.Revision {
		t.Error("fetch: want the built-in pins completed by a lock of their revision")
	}
	if p := load(LoadOptions{For: ForLock}); p.Complete() {
		t.Error("lock: want the built-in pins as they are")
	}
	other := lock
	other.Revision = strings.Repeat("b", 40)
	write(&other)
	if p := load(LoadOptions{For: ForInstalled}); p.Revision != other.Revision {
		t.Error("installed: want the lock file of another revision")
	}
	if p := load(LoadOptions{For: ForFetch}); p.Complete() || p.Revision != builtin.Revision {
		t.Error("fetch: want the built-in pins, not completed by a lock of another revision")
	}
	given := filepath.Join(t.TempDir(), "nvfp4.json")
	nv, _ := Builtin("nvfp4")
	if err := nv.WriteFile(given); err != nil {
		t.Fatal(err)
	}
	var ve *VariantError
	if _, err := Load(root, "full", LoadOptions{File: given, CheckVariant: true}); !errors.As(err, &ve) || ve.Variant != "nvfp4" || ve.Want != "full" {
		t.Errorf("a file of another variant: %v", err)
	}
	if p := load(LoadOptions{File: given, For: ForFetch}); p.Variant != "nvfp4" {
		t.Errorf("a file without --variant: %s", p.Variant)
	}
	if err := os.WriteFile(given, []byte(`{"format":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(root, "full", LoadOptions{File: given}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a malformed file: %v", err)
	}
}

// TestVerifyBeforeUseHashesOnlyWhatTheRecordDoesNotVouchFor: at sha256,
// files unchanged since their last full check are not read again, a file
// changed since is, and a size that no longer matches stops before any
// hashing.
func TestVerifyBeforeUseHashesOnlyWhatTheRecordDoesNotVouchFor(t *testing.T) {
	dir := t.TempDir()
	for name, n := range map[string]int{"a.bin": 1000, "b.bin": 3000} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	p, err := Make(ctx, dir, Pins{Format: Format, Variant: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var totals []int64
	hashing := func(total int64) (func(int64), func()) {
		totals = append(totals, total)
		return func(int64) {}, func() {}
	}
	check := func(want ...int64) *Report {
		t.Helper()
		totals = nil
		rep, err := VerifyBeforeUse(ctx, dir, p, LevelSHA256, hashing)
		if err != nil || len(totals) != len(want) || (len(want) > 0 && totals[0] != want[0]) {
			t.Fatalf("hashed %v, want %v (%v)", totals, want, err)
		}
		return rep
	}
	check(4000) // no record yet: every file
	check()     // every file vouched for by the record
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "b.bin"), later, later); err != nil {
		t.Fatal(err)
	}
	if rep := check(3000); !rep.OK() {
		t.Fatalf("a touched file of the same bytes: %+v", rep.Files)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.bin"), make([]byte, 999), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := check(); !rep.Mismatched() {
		t.Fatal("a file of another size must mismatch")
	}
}
