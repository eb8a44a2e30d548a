package prompt

import (
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// addCorpusSeeds seeds f with the golden corpus strings.
func addCorpusSeeds(f *testing.F, limit int) {
	for i, c := range readGolden(f, "golden-qwen3.jsonl") {
		if i == limit {
			break
		}
		f.Add(c.Text)
	}
}

// FuzzQwenScanner holds the hand-written scanner equal to regexp2 running
// the Qwen split pattern.
func FuzzQwenScanner(f *testing.F) {
	addCorpusSeeds(f, 1000)
	re, err := newSplitter(qwenPattern)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		want, err := re.regexpSpans(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := qwenSpans(s, nil); !slices.Equal(got, want) {
			t.Fatalf("%q:\nscanner %v\nregexp2 %v", s, got, want)
		}
	})
}

// FuzzEncode checks that any text encodes without error when it is valid
// UTF-8, that the tokens spell the text back, and that EncodeTokens (the
// sugarme pipeline) gives the same ids as Encode.
func FuzzEncode(f *testing.F) {
	addCorpusSeeds(f, 300)
	f.Add("a\xffb")
	tok := qwen(f)
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := tok.Encode(s)
		if !utf8.ValidString(s) {
			if err == nil {
				t.Fatalf("%q: invalid UTF-8 accepted", s)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if norm.NFC.IsNormalString(s) {
			if got := spell(t, tok, ids); got != s {
				t.Fatalf("%q: tokens spell %q", s, got)
			}
		}
		toks, err := tok.EncodeTokens(s)
		if err != nil {
			t.Fatalf("%q: EncodeTokens: %v", s, err)
		}
		for i, k := range toks {
			if i >= len(ids) || k.ID != ids[i] {
				t.Fatalf("%q: EncodeTokens gives %v, Encode %v", s, toks, ids)
			}
		}
	})
}

// spell turns ids back into text: added tokens as their content, others
// through the byte-level table.
func spell(t *testing.T, tok *Tokenizer, ids []int) string {
	var b []byte
	for _, id := range ids {
		if a, ok := tok.byID[id]; ok {
			b = append(b, a.Content...)
			continue
		}
		s, ok := tok.Token(id)
		if !ok {
			t.Fatalf("id %d not in the vocabulary", id)
		}
		raw, ok := unByteLevel(s)
		if !ok {
			t.Fatalf("token %q is not byte-level", s)
		}
		b = append(b, raw...)
	}
	return string(b)
}

// FuzzRead feeds tokenizer.json documents to the reader: it must return a
// tokenizer or an error, never panic.
func FuzzRead(f *testing.F) {
	for _, d := range []map[string]any{tinyDoc(), tinyDoc(added(300, "<x>", "lstrip", "rstrip"))} {
		b, _ := json.Marshal(d)
		f.Add(b)
	}
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[["a","a"]]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"added_tokens":[{"id":1}],"model":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := parse("fuzz.json", data)
		if err != nil {
			return
		}
		if _, err := tok.Encode("Hello, world <x> aaa"); err != nil {
			t.Fatalf("loaded tokenizer fails to encode: %v", err)
		}
	})
}
