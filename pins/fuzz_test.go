package pins

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds pins files to Parse: it must never panic, every refusal
// must wrap ErrInvalid, and whatever it accepts must marshal to a form that
// parses back to the same bytes.
func FuzzParse(f *testing.F) {
	names, _ := filepath.Glob("testdata/*.json")
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"format":"drama-pins/1","variant":"x","files":[{"path":"a/b","size":1,"sha256":"` + string(bytes.Repeat([]byte("a"), 64)) + `"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.json")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("refusal does not wrap ErrInvalid: %v", err)
			}
			return
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(out, "again.json")
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, out)
		}
		again, _ := q.Marshal()
		if !bytes.Equal(out, again) {
			t.Fatalf("canonical form is not stable:\n%s\n%s", out, again)
		}
	})
}
