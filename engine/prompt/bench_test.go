package prompt

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drama-tts/drama/voices"
)

// benchText is the benchmark text scripts/tokenizer-golden/golden.js times
// Hugging Face's tokenizers on: the file $DRAMA_TOKENIZER_BENCH_TEXT, else
// the golden corpus joined by newlines, repeated to 1 MiB and cut on a
// character boundary.
func benchText(tb testing.TB) string {
	if name := os.Getenv("DRAMA_TOKENIZER_BENCH_TEXT"); name != "" {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		return string(b)
	}
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

// chunkSize is the most bytes of a benchmark chunk: about a request's
// 4096-character limit.
const chunkSize = 4096

// benchChunks cuts text after line feeds into chunks of at most chunkSize
// bytes (a longer line is a chunk of its own), as golden.js does.
func benchChunks(text string) []string {
	var out []string
	start, end := 0, 0
	for _, line := range strings.SplitAfter(text, "\n") {
		if end > start && end-start+len(line) > chunkSize {
			out = append(out, text[start:end])
			start = end
		}
		end += len(line)
	}
	if end > start {
		out = append(out, text[start:end])
	}
	return out
}

// BenchmarkEncode1MiB tokenizes 1 MiB of text on one core: as one string
// (whole) and as chunks of at most 4 KiB (chunks4KiB), the size of a
// request. The word cache is warm, as a server's is.
func BenchmarkEncode1MiB(b *testing.B) {
	tok := qwen(b)
	text := benchText(b)
	for _, bc := range []struct {
		name   string
		chunks []string
	}{
		{"whole", []string{text}},
		{"chunks4KiB", benchChunks(text)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := encodeAll(b, tok, bc.chunks)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				encodeAll(b, tok, bc.chunks)
			}
			reportCPU(b, cpuTime(b)-cpu0, len(text))
			b.ReportMetric(float64(n), "tokens/op")
		})
	}
}

// cpuTime returns the CPU time the process has used, all threads.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports throughput by CPU time (cpu-MB/s): on a shared machine
// it stays near what one free core gives, where MB/s by the clock does not.
func reportCPU(b *testing.B, cpu time.Duration, size int) {
	if cpu > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "cpu-MB/s")
	}
}

func encodeAll(b *testing.B, tok *Tokenizer, chunks []string) int {
	n := 0
	for _, c := range chunks {
		ids, err := tok.Encode(c)
		if err != nil {
			b.Fatal(err)
		}
		n += len(ids)
	}
	return n
}

// BenchmarkEncodeTokens1MiB is BenchmarkEncode1MiB/chunks4KiB through
// EncodeTokens, sugarme's offset-tracking pipeline: the reason Encode does
// not use it.
func BenchmarkEncodeTokens1MiB(b *testing.B) {
	tok := qwen(b)
	text := benchText(b)
	chunks := benchChunks(text)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		for _, c := range chunks {
			if _, err := tok.EncodeTokens(c); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCPU(b, cpuTime(b)-cpu0, len(text))
}

// BenchmarkRead reads the 11 MB Qwen3 tokenizer.json.
func BenchmarkRead(b *testing.B) {
	data := qwenJSON(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		if _, err := parse("tokenizer.json", data); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpuTime(b)-cpu0, len(data))
}

// BenchmarkCount60s counts the prompt of a short text with a 60 s voice
// (eight references of 161 or 162 frames), as drama serve does for each
// request before it reaches the engine.
func BenchmarkCount60s(b *testing.B) {
	bld, err := NewBuilder(drama(b), Limits{Context: 32768, Reserve: DefaultReserve})
	if err != nil {
		b.Fatal(err)
	}
	var refs []voices.Reference
	for i, frames := range []int{161, 161, 162, 162, 161, 161, 162, 162} {
		c := make(voices.Codes, voices.NumCodebooks)
		for cb := range c {
			c[cb] = make([]int, frames)
			for t := range c[cb] {
				c[cb][t] = (i*7919 + cb*104729 + t*31) % voices.CodebookSize(cb)
			}
		}
		refs = append(refs, voices.Reference{Text: fmt.Sprintf("Reference passage %d, spoken plainly and clearly.", i), Codes: c})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bld.Count("Hello there, how are you today?", refs); err != nil {
			b.Fatal(err)
		}
	}
}
