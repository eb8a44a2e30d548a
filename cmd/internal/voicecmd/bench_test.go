package voicecmd

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/voices"
)

// benchFiles writes n canonical 60 s drama3-voice/1 files (eight references,
// 1292 frames in all) with distinct codes and returns their names.
func benchFiles(tb testing.TB, n int) []string {
	tb.Helper()
	dir := tb.TempDir()
	names := make([]string, n)
	for i := range names {
		v := &voices.Voice{Format: voices.FormatCUDA, ID: fmt.Sprintf("voice-%04d", i), Name: fmt.Sprintf("Voice %d", i)}
		for j, frames := range []int{161, 161, 162, 162, 161, 161, 162, 162} {
			v.References = append(v.References, voices.Reference{Text: fmt.Sprintf("Reference passage %d of voice %d, spoken plainly.", j, i), Codes: benchCodes(frames, i*8+j)})
		}
		names[i] = filepath.Join(dir, v.ID+".json")
		data, err := voices.Marshal(v, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(names[i], data, v.FileMode()); err != nil {
			tb.Fatal(err)
		}
	}
	return names
}

func benchCodes(frames, seed int) voices.Codes {
	c := make(voices.Codes, voices.NumCodebooks)
	for cb := range c {
		limit := voices.ResidualCodebookSize
		if cb == 0 {
			limit = voices.SemanticCodebookSize
		}
		c[cb] = make([]int, frames)
		for t := range c[cb] {
			c[cb][t] = (seed*7919 + cb*104729 + t*2654435761) % limit
		}
	}
	return c
}

// BenchmarkCheck1000 is `drama voice check` of 1,000 files of 60 s each:
// read, parse, every rule, sha256 and the canonical-form comparison.
func BenchmarkCheck1000(b *testing.B) {
	files := benchFiles(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range inspectAll(files, nil) {
			if !r.Valid || !r.Canonical {
				b.Fatalf("%s: %v", r.File, r.Problems)
			}
		}
	}
}
