package voices

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// DefaultSpecialTokens are the structural tokens of the Drama 3 prompt and
// its tokenizer that a transcript must not contain, used when no
// tokenizer.json is given. Any string holding "<|" or "|>" is refused
// anyway; the list adds the tokens without those marks.
var DefaultSpecialTokens = []string{
	"<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>",
	"<|phoneme_start|>", "<|phoneme_end|>", "<|text|>", "<|voice|>",
	"<|interleave|>", "<|audio_start|>", "<|audio_end|>", "<|audio_pad|>",
	"<|begin_of_text|>", "<|end_of_text|>", "<|tool_call_start|>", "<|tool_call_end|>", "<|audio|>",
	"<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
	"<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
	"<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
	"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
	"<|repo_name|>", "<|file_sep|>",
	"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
	"<think>", "</think>",
}

// Options tune validation. The zero value, or a nil *Options, uses the
// defaults.
type Options struct {
	// SpecialTokens are the strings a transcript must not contain besides
	// "<|" and "|>". Nil means DefaultSpecialTokens.
	SpecialTokens []string
}

func (o *Options) specials() []string {
	if o == nil || o.SpecialTokens == nil {
		return DefaultSpecialTokens
	}
	return o.SpecialTokens
}

// CheckTranscript checks a reference transcript: valid UTF-8 in NFC, 1 to
// 2000 runes, no leading or trailing space, no control characters or line
// breaks, no "<|" or "|>", and none of specials (nil means
// DefaultSpecialTokens). The error wraps ErrTranscript.
func CheckTranscript(text string, specials []string) error {
	if specials == nil {
		specials = DefaultSpecialTokens
	}
	if err := checkPlain(text, MaxTextRunes, false); err != nil {
		return fmt.Errorf("%w: %w", ErrTranscript, err)
	}
	for _, mark := range []string{"<|", "|>"} {
		if i := strings.Index(text, mark); i >= 0 {
			return fmt.Errorf("%w: holds %q at byte %d, a mark of the prompt's structural tokens: remove it", ErrTranscript, mark, i)
		}
	}
	for _, tok := range specials {
		if i := strings.Index(text, tok); tok != "" && i >= 0 {
			return fmt.Errorf("%w: holds the tokenizer's special token %q at byte %d: remove it", ErrTranscript, tok, i)
		}
	}
	return nil
}

// checkPlain checks a one-line text: valid UTF-8, NFC, 1..max runes, trimmed,
// no control characters (line feeds allowed only when lf is true).
func checkPlain(s string, max int, lf bool) error {
	switch n := utf8.RuneCountInString(s); {
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8")
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("empty")
	case n > max:
		return fmt.Errorf("want at most %d characters, got %d", max, n)
	case strings.TrimSpace(s) != s:
		return fmt.Errorf("leading or trailing white space: trim it")
	case !isNFC(s):
		return fmt.Errorf("not in Unicode normal form C: normalize it to NFC")
	}
	for i, r := range s {
		if bad := badRune(r, lf); bad != "" {
			return fmt.Errorf("%s %U at byte %d", bad, r, i)
		}
	}
	return nil
}

// isNFC reports whether s is in normal form C. Text made only of characters
// that pass NFC's quick check outright (quick-check Yes, combining class 0)
// is NFC by definition, so the normalizer runs only on text holding others.
func isNFC(s string) bool {
	for _, r := range s {
		if r >= 0x300 && !nfcStarter(r) {
			return norm.NFC.IsNormalString(s)
		}
	}
	return true
}

// nfcBlocks caches, per block of 64 characters of the Basic Multilingual
// Plane, a bitmap of the characters that pass NFC's quick check outright;
// nfcDone marks the blocks computed. A block computed twice at once gives
// the same bits, so no lock is needed.
var (
	nfcBlocks [1 << 10]atomic.Uint64
	nfcDone   [1 << 10]atomic.Bool
)

func nfcStarter(r rune) bool {
	if r > 0xffff {
		return false
	}
	blk := r >> 6
	if !nfcDone[blk].Load() {
		nfcBlocks[blk].Store(nfcBlock(blk))
		nfcDone[blk].Store(true)
	}
	return nfcBlocks[blk].Load()&(1<<(r&63)) != 0
}

// nfcBlock computes one block's bitmap from the normalizer's own tables.
func nfcBlock(blk rune) uint64 {
	var bits uint64
	var buf [4]byte
	for r := blk << 6; r < (blk+1)<<6; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		b := buf[:utf8.EncodeRune(buf[:], r)]
		if p := norm.NFC.Properties(b); p.BoundaryBefore() && p.CCC() == 0 && norm.NFC.IsNormal(b) {
			bits |= 1 << (r & 63)
		}
	}
	return bits
}

func badRune(r rune, lf bool) string {
	switch {
	case r == '\n' && lf:
		return ""
	case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' || r == '\u0085':
		return "line break"
	case unicode.IsControl(r):
		return "control character"
	case r == utf8.RuneError:
		return "replacement character (the text was mis-decoded)"
	}
	return ""
}

// maxTokenizerSize bounds the tokenizer.json read for its added tokens.
const maxTokenizerSize = 64 << 20

// SpecialTokensFromTokenizer reads the added tokens of a Hugging Face
// tokenizer.json (its added_tokens[].content), for Options.SpecialTokens.
// Tokens holding "<|" or "|>" are left out: the transcript rule refuses those
// marks anyway.
func SpecialTokensFromTokenizer(r io.Reader) ([]string, error) {
	var doc struct {
		AddedTokens *[]struct {
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	dec := json.NewDecoder(io.LimitReader(r, maxTokenizerSize))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("voices: read tokenizer.json: %w", err)
	}
	if doc.AddedTokens == nil {
		return nil, fmt.Errorf("voices: read tokenizer.json: no added_tokens list")
	}
	toks := make([]string, len(*doc.AddedTokens))
	for i, t := range *doc.AddedTokens {
		toks[i] = t.Content
	}
	return TranscriptSpecials(toks), nil
}

// TranscriptSpecials returns the special tokens a transcript must be
// checked against, for Options.SpecialTokens: tokens, each once, without the
// blank ones and those holding "<|" or "|>", which the transcript rule
// refuses anyway. A Drama tokenizer's 4,096 <|semantic:N|> tokens are left
// out this way, so a check does not search for each of them.
func TranscriptSpecials(tokens []string) []string {
	out := []string{}
	for _, c := range tokens {
		if strings.TrimSpace(c) == "" || strings.Contains(c, "<|") || strings.Contains(c, "|>") || slices.Contains(out, c) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// ReadTokenizerFile reads the added tokens of the tokenizer.json at name; see
// SpecialTokensFromTokenizer.
func ReadTokenizerFile(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("voices: read tokenizer: %w", err)
	}
	defer f.Close()
	toks, err := SpecialTokensFromTokenizer(f)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, name)
	}
	return toks, nil
}
