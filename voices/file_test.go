package voices

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/internal/atomicfile"
)

// writeVoice writes v as drama writes a voice file (drama voice convert,
// drama encode): canonically by Marshal, atomically, with v.FileMode(). It
// returns the hex sha256 of the bytes written.
func writeVoice(name string, v *Voice) (string, error) {
	data, err := Marshal(v, nil)
	if err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(name, data, v.FileMode()); err != nil {
		return "", err
	}
	return FileSHA256(data), nil
}

func TestWriteVoiceModes(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		in   string
		to   Format
		mode os.FileMode
	}{
		{"cloned.json", FormatCloned, 0o600},
		{"cloned.json", FormatMetal, 0o600}, // consented: a person's voice
		{"metal.json", FormatMetal, 0o644},  // synthetic
		{"cuda.json", FormatCUDA, 0o644},
	}
	for _, c := range cases {
		v := mustParse(t, c.in)
		v.Format = c.to
		name := filepath.Join(dir, c.in+"-"+strings.ReplaceAll(string(c.to), "/", "_"))
		sum, err := writeVoice(name, v)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.mode {
			t.Errorf("%s as %s: mode %o, want %o", c.in, c.to, st.Mode().Perm(), c.mode)
		}
		data, _ := os.ReadFile(name)
		if FileSHA256(data) != sum {
			t.Errorf("returned sha256 %s does not match the file", sum)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(cases) {
		t.Errorf("%d files in the directory, want %d (temporary files left?)", len(entries), len(cases))
	}
}

func TestWriteVoiceInvalidLeavesTargetAlone(t *testing.T) {
	name := filepath.Join(t.TempDir(), "v.json")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := mustParse(t, "cuda.json")
	v.ID = "Not Valid"
	if _, err := writeVoice(name, v); !errors.Is(err, ErrID) {
		t.Fatalf("err = %v, want ErrID", err)
	}
	if data, _ := os.ReadFile(name); string(data) != "old" {
		t.Errorf("target changed to %q", data)
	}
	if _, err := writeVoice(filepath.Join(t.TempDir(), "missing", "v.json"), mustParse(t, "cuda.json")); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big file: err = %v, want ErrTooLarge", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.json"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want os.ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": "drama3-voice/1", "id": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(bad, nil)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.File != bad || fe.Field != "id" || fe.Offset != 35 {
		t.Errorf("err = %#v, want a FieldError for %s field id at offset 35", err, bad)
	}
	_, err = Parse([]byte(`{"format": "drama3-voice/1",  "format": "x"}`), nil)
	if !errors.As(err, &fe) || !errors.Is(err, ErrDuplicate) || fe.Offset != 30 {
		t.Errorf("duplicate key: err = %v, want ErrDuplicate at offset 30", err)
	}
}
