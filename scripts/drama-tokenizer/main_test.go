package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/engine/prompt"
	"github.com/drama-tts/drama/engine/prompt/prompttest"
)

// small-tokenizer.json is what -small 2000 makes, byte for byte.
func TestSmallTokenizerIsTheScripts(t *testing.T) {
	want, err := Small(SmallMerges)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("small-tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("small-tokenizer.json differs from the script's output: run go run ./scripts/drama-tokenizer -small 2000 DIR and copy DIR/tokenizer.json here")
	}
}

// drama reads the small tokenizer as a byte-level BPE one: its ids decode
// back to the text, its tokens are Qwen3's, and it builds Drama prompts.
func TestSmallTokenizerIsADramaTokenizer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "made", "yet")
	name, err := write(dir, SmallMerges)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := prompt.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	qwenPath, err := prompttest.WriteDrama(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	qwen, err := prompt.Open(qwenPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Hello there. [laughs] It works.", "日本語のテキスト。", "<|im_start|>user\nhi<|im_end|>", "café  naïve\r\n\ttabs"} {
		ids, err := tok.Encode(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		var back []byte
		for _, id := range ids {
			b, ok := tok.TokenBytes(id)
			if !ok {
				t.Fatalf("%q: id %d has no bytes", text, id)
			}
			back = append(back, b...)
			s, _ := tok.Token(id)
			if _, ok := qwen.ID(s); !ok {
				t.Fatalf("%q: token %q is not Qwen3's", text, s)
			}
		}
		if string(back) != text {
			t.Fatalf("%q decodes to %q", text, back)
		}
		long, _ := qwen.Count(text)
		if len(ids) < long {
			t.Fatalf("%q: %d tokens, fewer than Qwen3's %d", text, len(ids), long)
		}
	}
	b, err := prompt.NewBuilder(tok, prompt.Limits{Context: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.Count("Hello there.", nil); err != nil || n == 0 {
		t.Fatalf("prompt: %d %v", n, err)
	}
	if begin, err := tok.SemanticBegin(); err != nil || begin != 2256+26+len(prompttest.FishTokens) {
		t.Fatalf("semantic tokens from %d (%v)", begin, err)
	}
}
