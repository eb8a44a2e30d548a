package prompt

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
)

// The test tokenizers are the Qwen3 tokenizer.json (testdata, gzipped) and
// the same file with Fish Audio's added tokens appended, as
// scripts/tokenizer-golden/golden.js builds it.
var (
	qwenOnce, dramaOnce sync.Once
	qwenTok, dramaTok   *Tokenizer
	qwenErr, dramaErr   error
)

func qwenJSON(tb testing.TB) []byte {
	tb.Helper()
	f, err := os.Open("testdata/qwen3-tokenizer.json.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var doc bytesBuf
	if _, err := doc.ReadFrom(zr); err != nil {
		tb.Fatal(err)
	}
	return doc.Bytes()
}

// fishTokens are Fish Audio's added tokens after Qwen3's, from id 151669.
var fishTokens = []string{"<|pad|>", "<|phoneme_start|>", "<|phoneme_end|>", "<|text|>", "<|voice|>",
	"<|interleave|>", "<|audio_start|>", "<|audio_end|>", "<|audio_pad|>"}

// dramaJSON returns the Qwen3 tokenizer.json with the Fish tokens appended.
func dramaJSON(tb testing.TB, base []byte) []byte {
	tb.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(base, &doc); err != nil {
		tb.Fatal(err)
	}
	var added []map[string]any
	if err := json.Unmarshal(doc["added_tokens"], &added); err != nil {
		tb.Fatal(err)
	}
	id := 151669
	add := func(c string) {
		added = append(added, map[string]any{"id": id, "content": c, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
		id++
	}
	for _, c := range fishTokens {
		add(c)
	}
	for i := range 4096 {
		add(fmt.Sprintf("<|semantic:%d|>", i))
	}
	b, err := json.Marshal(added)
	if err != nil {
		tb.Fatal(err)
	}
	doc["added_tokens"] = b
	out, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func qwen(tb testing.TB) *Tokenizer {
	tb.Helper()
	qwenOnce.Do(func() { qwenTok, qwenErr = parse("qwen3-tokenizer.json", qwenJSON(tb)) })
	if qwenErr != nil {
		tb.Fatal(qwenErr)
	}
	return qwenTok
}

func drama(tb testing.TB) *Tokenizer {
	tb.Helper()
	dramaOnce.Do(func() { dramaTok, dramaErr = parse("drama-tokenizer.json", dramaJSON(tb, qwenJSON(tb))) })
	if dramaErr != nil {
		tb.Fatal(dramaErr)
	}
	return dramaTok
}

type goldenCase struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

func readGolden(tb testing.TB, name string) []goldenCase {
	tb.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []goldenCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c goldenCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			tb.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

type bytesBuf = bytes.Buffer
