package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine/prompt/prompttest"
)

// tinyDoc returns a small byte-level BPE tokenizer.json as a map: every
// byte token, the merges "a a" and "aa a", the Qwen split pattern, NFC, and
// the added tokens given.
func tinyDoc(added ...map[string]any) map[string]any {
	vocab := map[string]any{}
	for b := range 256 {
		vocab[string(byteRunes[b])] = b
	}
	vocab["aa"] = 256
	vocab["aaa"] = 257
	vocab["Ġa"] = 258
	if added == nil {
		added = []map[string]any{}
	}
	return map[string]any{
		"version":      "1.0",
		"normalizer":   map[string]any{"type": "NFC"},
		"added_tokens": added,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "vocab": vocab,
			"merges": []any{"a a", []any{"aa", "a"}, "Ġ a"}},
	}
}

func added(id int, content string, opts ...string) map[string]any {
	m := map[string]any{"id": id, "content": content, "special": true, "normalized": false}
	for _, o := range opts {
		m[o] = true
	}
	return m
}

func tinyTokenizer(t *testing.T, doc map[string]any) (*Tokenizer, error) {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return parse("tiny.json", b)
}

func mustTiny(t *testing.T, doc map[string]any) *Tokenizer {
	t.Helper()
	tok, err := tinyTokenizer(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestMergeOrder(t *testing.T) {
	tok := mustTiny(t, tinyDoc())
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"a", []int{'a'}},
		{"aa", []int{256}},
		// Equal ranks apply leftmost first: (aa)a, then "aa a".
		{"aaa", []int{257}},
		{"aaaa", []int{256, 256}},
		{"aaaaa", []int{256, 257}}, // (aa)(aa)a, then aa+a at the right
		{" a", []int{258}},
		{"b", []int{'b'}},
	} {
		got, err := tok.Encode(tc.text)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, %v; want %v", tc.text, got, err, tc.want)
		}
	}
}

func TestAddedTokenMatching(t *testing.T) {
	doc := tinyDoc(added(300, "<a>"), added(301, "<a>b>"), added(302, "[L]", "lstrip"),
		added(303, "[R]", "rstrip"), added(304, "wd", "single_word"))
	tok := mustTiny(t, doc)
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"<a>", []int{300}},
		{"<a>b>", []int{301}}, // longest at the leftmost start
		{"x<a><a>b>", []int{'x', 300, 301}},
		{"b  [L]b", []int{'b', 302, 'b'}}, // lstrip takes the spaces before
		{"b[R]  b", []int{'b', 303, 'b'}}, // rstrip takes the spaces after
		{"wd", []int{304}},
		{"a wd", []int{'a', ' ', 304}},
		{"xwd", []int{'x', 'w', 'd'}}, // not a single word here
	} {
		got, err := tok.Encode(tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(d map[string]any)
		field string
		is    error
		msg   string
	}{
		{"model type", func(d map[string]any) { d["model"].(map[string]any)["type"] = "WordPiece" }, "model.type", ErrUnsupported, `want BPE, got "WordPiece"`},
		{"dropout", func(d map[string]any) { d["model"].(map[string]any)["dropout"] = 0.1 }, "model.dropout", ErrUnsupported, "want null"},
		{"byte fallback", func(d map[string]any) { d["model"].(map[string]any)["byte_fallback"] = true }, "model.byte_fallback", ErrUnsupported, ""},
		{"merge shape", func(d map[string]any) { d["model"].(map[string]any)["merges"] = []any{"a a b"} }, "model.merges[0]", nil, `want "a b"`},
		{"merge part", func(d map[string]any) { d["model"].(map[string]any)["merges"] = []any{"a zz"} }, "model.merges[0]", nil, `"zz" is not in model.vocab`},
		{"merged token", func(d map[string]any) { d["model"].(map[string]any)["merges"] = []any{"b c"} }, "model.merges[0]", nil, `merged token "bc"`},
		{"byte missing", func(d map[string]any) {
			delete(d["model"].(map[string]any)["vocab"].(map[string]any), "Ġ")
			d["model"].(map[string]any)["merges"] = []any{"a a"}
		}, "model.vocab", nil, "no token for byte 0x20"},
		{"normalizer", func(d map[string]any) { d["normalizer"] = map[string]any{"type": "Lowercase"} }, "normalizer", ErrUnsupported, `got "Lowercase"`},
		{"no pre-tokenizer", func(d map[string]any) { d["pre_tokenizer"] = nil }, "pre_tokenizer", ErrUnsupported, "missing"},
		{"whitespace", func(d map[string]any) { d["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }, "pre_tokenizer", ErrUnsupported, ""},
		{"prefix space", func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true}
		}, "pre_tokenizer", ErrUnsupported, "add_prefix_space"},
		{"removed", func(d map[string]any) {
			d["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["behavior"] = "Removed"
		}, "pre_tokenizer", ErrUnsupported, `"Removed"`},
		{"bad regex", func(d map[string]any) {
			d["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": "(["}
		}, "pre_tokenizer.pattern", nil, ""},
		{"added id clash", func(d map[string]any) { d["added_tokens"] = []any{added(97, "<x>")} }, "added_tokens[0]", nil, `id 97 is "a" in model.vocab`},
		{"added vocab id", func(d map[string]any) { d["added_tokens"] = []any{added(999, "aa")} }, "added_tokens[0]", nil, "want id 256 as in model.vocab, got 999"},
		{"added twice", func(d map[string]any) { d["added_tokens"] = []any{added(300, "<x>"), added(300, "<y>")} }, "added_tokens[1]", nil, "given twice"},
		{"added empty", func(d map[string]any) { d["added_tokens"] = []any{added(300, "")} }, "added_tokens[0]", nil, "non-empty content"},
		{"vocab type", func(d map[string]any) { d["model"].(map[string]any)["vocab"] = map[string]any{"a": "x"} }, "", nil, "want int, got JSON string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tinyDoc()
			tc.edit(d)
			_, err := tinyTokenizer(t, d)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *FormatError", err)
			}
			if fe.File != "tiny.json" || fe.Field != tc.field {
				t.Errorf("file, field = %q, %q; want tiny.json, %q (%v)", fe.File, fe.Field, tc.field, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want it to say %q", err, tc.msg)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct{ doc, msg string }{
		{"", "empty file"},
		{"{\"model\": [", "invalid JSON at byte"},
		{"[1, 2]", "want prompt.fileJSON"},
	} {
		name := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(name, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(name)
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Open of %q = %v, want a FormatError saying %q", tc.doc, err, tc.msg)
		}
	}
	if _, err := Open("testdata/does-not-exist.json"); err == nil || !strings.Contains(err.Error(), "does-not-exist.json") {
		t.Errorf("Open of a missing file: %v", err)
	}
}

func TestInvalidUTF8(t *testing.T) {
	tok := mustTiny(t, tinyDoc())
	_, err := tok.Encode("ab\xffc")
	var te *TextError
	if !errors.As(err, &te) || te.Offset != 2 || !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("err = %v, want a TextError at byte 2 wrapping ErrInvalidUTF8", err)
	}
	if _, err := tok.EncodeTokens("\xc3"); !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("EncodeTokens: err = %v", err)
	}
}

func TestTokensAndIDs(t *testing.T) {
	tok := qwen(t)
	ids, err := tok.Encode("<|im_start|>Hello world")
	if err != nil {
		t.Fatal(err)
	}
	toks, err := tok.Tokens(ids)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"<|im_start|>", "Hello", "Ġworld"}; !slices.Equal(toks, want) {
		t.Errorf("Tokens = %q, want %q", toks, want)
	}
	if id, ok := tok.ID("Ġworld"); !ok || id != ids[2] {
		t.Errorf("ID(Ġworld) = %d, %v", id, ok)
	}
	if b, ok := tok.TokenBytes(ids[2]); !ok || string(b) != " world" {
		t.Errorf("TokenBytes = %q, %v", b, ok)
	}
	if b, ok := tok.TokenBytes(ids[0]); !ok || string(b) != "<|im_start|>" {
		t.Errorf("TokenBytes(<|im_start|>) = %q, %v", b, ok)
	}
	if _, ok := tok.TokenBytes(-5); ok {
		t.Error("TokenBytes(-5) ok")
	}
	if _, err := tok.Tokens([]int{-1}); err == nil {
		t.Error("Tokens(-1): no error")
	}
	if n, err := tok.Count("Hello world"); n != 2 || err != nil {
		t.Errorf("Count = %d, %v", n, err)
	}
	if len(tok.AddedTokens()) != 26 || len(tok.SpecialTokens()) != 26 {
		t.Errorf("added tokens: %d, special: %d; want 26", len(tok.AddedTokens()), len(tok.SpecialTokens()))
	}
}

func TestEncodeTokensOffsets(t *testing.T) {
	tok := qwen(t)
	text := "Caf\u00e9 [laughs]<|im_end|> 中文"
	toks, err := tok.EncodeTokens(text)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, k := range toks {
		if k.Value == "<|im_end|>" {
			if text[k.Start:k.End] != "<|im_end|>" {
				t.Errorf("added token offsets [%d,%d)", k.Start, k.End)
			}
			b.WriteString(k.Value)
			continue
		}
		raw, ok := unByteLevel(k.Value)
		if !ok {
			t.Fatalf("token %q is not byte-level", k.Value)
		}
		b.Write(raw)
	}
	if b.String() != text {
		t.Errorf("tokens spell %q, want %q", b.String(), text)
	}
	// NFC: a decomposed é is one token; like Hugging Face's tokenizers,
	// its offsets cover the "e" the composed character replaced, and the
	// next token starts after the removed combining mark.
	toks, err = tok.EncodeTokens("xe\u0301y")
	if err != nil || len(toks) != 3 || toks[1].Start != 1 || toks[1].End != 2 || toks[2].Start != 4 {
		t.Errorf("EncodeTokens(x, e + combining acute, y) = %+v, %v", toks, err)
	}
}

func TestCheckText(t *testing.T) {
	tok := drama(t)
	for _, tc := range []struct {
		text   string
		offset int
	}{
		{"[laughs] fine (sighs)", -1},
		{"a <|im_end|>", 2},
		{"think <think> twice", 6},
		{"x |> y", 2},
		{"speaker <|speaker:1|>", 8},
		{"<tool_call>", 0},
	} {
		err := tok.CheckText("text", tc.text)
		if tc.offset < 0 {
			if err != nil {
				t.Errorf("CheckText(%q) = %v", tc.text, err)
			}
			continue
		}
		var te *TextError
		if !errors.As(err, &te) || te.Offset != tc.offset || !errors.Is(err, ErrStructuralToken) {
			t.Errorf("CheckText(%q) = %v, want ErrStructuralToken at %d", tc.text, err, tc.offset)
		}
	}
}

func TestSemanticBegin(t *testing.T) {
	if got, err := drama(t).SemanticBegin(); got != 151678 || err != nil {
		t.Fatalf("SemanticBegin = %d, %v; want 151678", got, err)
	}
	if _, err := qwen(t).SemanticBegin(); !errors.Is(err, ErrSemantic) {
		t.Fatalf("Qwen3 without semantic tokens: err = %v", err)
	}
	var toks []map[string]any
	for i := range SemanticTokens {
		id := 300 + i
		if i == 7 {
			id = 9000
		}
		toks = append(toks, added(id, SemanticToken(i)))
	}
	_, err := mustTiny(t, tinyDoc(toks...)).SemanticBegin()
	if !errors.Is(err, ErrSemantic) || !strings.Contains(err.Error(), "<|semantic:7|>: want id 307, got 9000") {
		t.Fatalf("gap at 7: err = %v", err)
	}
	toks[7] = added(307, SemanticToken(7))
	_, err = mustTiny(t, tinyDoc(toks[:100]...)).SemanticBegin()
	if !errors.Is(err, ErrSemantic) || !strings.Contains(err.Error(), "no <|semantic:100|>") {
		t.Fatalf("only 100: err = %v", err)
	}
}

func ExampleTokenizer_Encode() {
	dir, err := os.MkdirTemp("", "tokenizer")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path, err := prompttest.WriteDrama(dir) // a checkpoint's tokenizer.json
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, err := tok.Encode("[laughs] Hello!")
	fmt.Println(ids, err)
	// Output:
	// [58 72456 60 21927 0] <nil>
}

func TestGPT2PatternAndIgnoreMerges(t *testing.T) {
	d := tinyDoc()
	d["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}
	d["model"].(map[string]any)["vocab"].(map[string]any)["bcd"] = 259
	tok := mustTiny(t, d)
	if tok.split.scan != nil {
		t.Fatal("the GPT-2 pattern must run on regexp2")
	}
	// GPT-2 splits " aaa" as one piece, so the space merges with an a first
	// ("Ġ a" is the last merge by rank, but "a a" comes first).
	for text, want := range map[string][]int{" aaa": {' ', 257}, "a  a": {'a', ' ', 258}, "bcd": {'b', 'c', 'd'}} {
		if got, err := tok.Encode(text); err != nil || !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	d["model"].(map[string]any)["ignore_merges"] = true
	tok = mustTiny(t, d)
	if got, err := tok.Encode("bcd"); err != nil || !slices.Equal(got, []int{259}) {
		t.Errorf("ignore_merges: Encode(bcd) = %v, %v; want [259]", got, err)
	}
}
