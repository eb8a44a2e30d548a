package prompt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// benchText is the benchmark text scripts/tokenizer-golden/golden.js times
// Hugging Face's tokenizers on: the golden corpus joined by newlines,
// repeated to 1 MiB and cut on a character boundary.
func benchText(tb testing.TB) string {
	var b strings.Builder
	for _, c := range readGolden(tb, "golden-qwen3.jsonl") {
		b.WriteString(c.Text)
		b.WriteByte('\n')
	}
	const want = 1 << 20
	s := strings.Repeat(b.String(), want/b.Len()+2)
	end := want
	for !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}

// BenchmarkEncode1MiB tokenizes 1 MiB of text in one call, on one core.
func BenchmarkEncode1MiB(b *testing.B) {
	tok := qwen(b)
	text := benchText(b)
	if _, err := tok.Encode(text); err != nil { // warm the word cache, as a server's is
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		ids, err := tok.Encode(text)
		if err != nil {
			b.Fatal(err)
		}
		n = len(ids)
	}
	b.ReportMetric(float64(n), "tokens/op")
}
