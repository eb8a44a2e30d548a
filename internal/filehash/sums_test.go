package filehash

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	sumA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sumB = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

// TestParseSumsForms reads the forms sha256sum writes (text and binary
// mode), with blank lines, CRLF endings, a tab, upper-case digits and
// names that are paths.
func TestParseSumsForms(t *testing.T) {
	data := sumA + "  tensorfold-native\r\n\n" +
		strings.ToUpper(sumB) + " *bin/drama3-generate\n" +
		"   \n" +
		sumA + "\t/opt/engine/with space\n" +
		sumB + " single\n"
	got, err := ParseSums("engine.sha256", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []Sum{
		{sumA, "tensorfold-native", 1},
		{sumB, "bin/drama3-generate", 3},
		{sumA, "/opt/engine/with space", 5},
		{sumB, "single", 6},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if sums, err := ParseSums("empty", nil); err != nil || len(sums) != 0 {
		t.Errorf("an empty file: %v, %v; want no sums and no error", sums, err)
	}
}

// TestParseSumsRefusesBadLines plays a sums file's writer who gets the
// format wrong, or tries to: every bad line is an error naming the file,
// the line and the fault, with no control character of the line printed
// raw.
func TestParseSumsRefusesBadLines(t *testing.T) {
	for _, c := range []struct {
		name, line, fault string
	}{
		{"short digest", sumA[:63] + "  engine", "is not 64 hex digits"},
		{"long digest", sumA + "0  engine", "is not 64 hex digits"},
		{"not hex", "g" + sumA[1:] + "  engine", "is not 64 hex digits"},
		{"name only", "tensorfold-native", "is not 64 hex digits"},
		{"no name", sumA, "no file name"},
		{"no name after the spaces", sumA + "  ", "no file name"},
		{"no name after the star", sumA + " *", "no file name"},
		{"escape in the name", sumA + "  engine\x1b[2J", `holds a control character`},
		{"C1 in the name", sumA + "  engine\u009b", `holds a control character`},
		{"escaped name", `\` + sumA + `  a\nb`, "escaped file name"},
		{"named twice", sumB + "  engine", "named again (first on line 1)"},
	} {
		data := sumA + "  engine\n" + c.line + "\n"
		sums, err := ParseSums("dir/engine.sha256", []byte(data))
		var le *LineError
		if !errors.As(err, &le) || !errors.Is(err, ErrSumsFormat) {
			t.Errorf("%s: got %v, %v; want a *LineError", c.name, sums, err)
			continue
		}
		msg := err.Error()
		if le.File != "dir/engine.sha256" || le.Line != 2 || !strings.Contains(msg, "dir/engine.sha256 line 2: ") ||
			!strings.Contains(msg, c.fault) || !strings.Contains(msg, "as sha256sum writes it") {
			t.Errorf("%s: %q (line %d); want the file, line 2, %q and the format", c.name, msg, le.Line, c.fault)
		}
		if strings.ContainsAny(msg, "\x1b\u009b") {
			t.Errorf("%s: the message holds the line's control characters raw: %q", c.name, msg)
		}
	}
}

// TestReadSums reads a file, says a missing one is missing, and refuses
// one too large to be a sums file without reading it whole.
func TestReadSums(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.sha256")
	if err := os.WriteFile(p, []byte(sumA+"  x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if sums, err := ReadSums(p); err != nil || len(sums) != 1 || sums[0].Name != "x" {
		t.Errorf("ReadSums: %v, %v", sums, err)
	}
	if _, err := ReadSums(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "none") {
		t.Errorf("a missing file: %v; want os.ErrNotExist naming it", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat(sumA+"  x\n", MaxSumsSize/60)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSums(big); err == nil || !strings.Contains(err.Error(), big) {
		t.Errorf("a file over %d bytes: %v; want an error naming it", MaxSumsSize, err)
	}
}
