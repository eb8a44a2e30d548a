package prompt

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/drama-tts/drama/engine/prompt/prompttest"
)

// The test tokenizers are prompttest's: the Qwen3 tokenizer.json and the
// same file with Fish Audio's added tokens appended.
var (
	qwenOnce, dramaOnce sync.Once
	qwenTok, dramaTok   *Tokenizer
	qwenErr, dramaErr   error
)

func qwenJSON(tb testing.TB) []byte {
	tb.Helper()
	b, err := prompttest.QwenJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func dramaJSON(tb testing.TB) []byte {
	tb.Helper()
	b, err := prompttest.DramaJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
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
	dramaOnce.Do(func() { dramaTok, dramaErr = parse("drama-tokenizer.json", dramaJSON(tb)) })
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
