package voices

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func addSeeds(f *testing.F, pattern string) {
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzParse checks that no input panics and that whatever parses cleanly
// writes back canonically: Marshal accepts it, and parsing the output gives
// the same bytes again.
func FuzzParse(f *testing.F) {
	addSeeds(f, "*.json")
	addSeeds(f, "golden/*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data, nil)
		if err != nil {
			return
		}
		out, err := Marshal(v, nil)
		if err != nil {
			t.Fatalf("Marshal refused a voice Parse accepted: %v", err)
		}
		if IsCanonical(data, v) != bytes.Equal(data, out) {
			t.Fatalf("IsCanonical disagrees with Marshal")
		}
		v2, err := Parse(out, nil)
		if err != nil {
			t.Fatalf("canonical output does not parse: %v\n%s", err, out)
		}
		out2, err := Marshal(v2, nil)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("canonical output is not stable: %v", err)
		}
	})
}

// FuzzReadNPY checks that no input panics and that what reads has the
// (10, T) shape with T in 1..MaxFrames.
func FuzzReadNPY(f *testing.F) {
	addSeeds(f, "fish/*.npy")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadNPY(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(c) != NumCodebooks || c.Frames() < 1 || c.Frames() > MaxFrames {
			t.Fatalf("ReadNPY returned %d x %d codes", len(c), c.Frames())
		}
	})
}

// FuzzSpecialTokensFromTokenizer checks that no input panics and that the
// tokens returned are never empty or carry the marks already refused.
func FuzzSpecialTokensFromTokenizer(f *testing.F) {
	addSeeds(f, "tokenizer.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		toks, err := SpecialTokensFromTokenizer(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, tok := range toks {
			if strings.TrimSpace(tok) == "" || strings.Contains(tok, "<|") || strings.Contains(tok, "|>") {
				t.Fatalf("token %q returned", tok)
			}
		}
	})
}
