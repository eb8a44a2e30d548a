package prompt

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// unicodeBlock is golden.js's sweep text for code points start..start+0xFFF
// (surrogates left out): each one next to a letter, a digit and spaces.
func unicodeBlock(start int) string {
	var b strings.Builder
	for cp := start; cp < start+0x1000; cp++ {
		if cp >= 0xd800 && cp <= 0xdfff {
			continue
		}
		ch := string(rune(cp))
		b.WriteString(ch + "a" + ch + "1 " + ch + " x\n")
	}
	return b.String()
}

// TestUnicodeSweep checks every code point of Unicode in context against
// Hugging Face's tokenizers: per block of 4096, the count and the sha256 of
// the ids. It catches a character class (\p{L}, \p{N}, \s) or an NFC
// mapping on which Go's Unicode tables and Hugging Face's differ.
func TestUnicodeSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 5.5 MB")
	}
	tok := qwen(t)
	f, err := os.Open("testdata/golden-unicode.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	blocks := 0
	for sc.Scan() {
		var g struct {
			Start  int    `json:"start"`
			Tokens int    `json:"tokens"`
			SHA256 string `json:"sha256"`
		}
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		blocks++
		if raceEnabled && blocks%16 != 1 {
			continue // 17 blocks of 272 under the race detector (ten times slower)
		}
		ids, err := tok.Encode(unicodeBlock(g.Start))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for _, id := range ids {
			h.Write(binary.LittleEndian.AppendUint32(nil, uint32(id)))
		}
		if got := hex.EncodeToString(h.Sum(nil)); len(ids) != g.Tokens || got != g.SHA256 {
			t.Errorf("code points %#x..%#x: %d tokens, sha256 %s; want %d, %s", g.Start, g.Start+0xfff, len(ids), got[:12], g.Tokens, g.SHA256[:12])
		}
	}
	if blocks != 272 {
		t.Fatalf("%d blocks, want 272 (all of Unicode)", blocks)
	}
}
