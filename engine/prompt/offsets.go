package prompt

import (
	"fmt"
	"unicode/utf8"

	"github.com/sugarme/tokenizer/normalizer"
	"golang.org/x/text/unicode/norm"
)

// Token is one token of an encoding and the part of the text it came from.
type Token struct {
	ID    int    // token id
	Value string // the token as the vocabulary writes it (byte-level: a space is "Ġ")
	// Start and End are the byte offsets in the text given to EncodeTokens
	// of the characters the token came from. Tokens that share one
	// multi-byte character share its offsets.
	Start, End int
}

// EncodeTokens is Encode with each token's string and offsets. It runs
// sugarme's pipeline, which tracks offsets through normalization; Encode
// does not track them and is many times faster, so counting and prompt
// building use Encode.
//
// When the tokenizer has added tokens that match after normalization (none
// of the Qwen and Fish tokenizers do), offsets of the text around them are
// in the NFC form of the text.
func (t *Tokenizer) EncodeTokens(text string) ([]Token, error) {
	if !utf8.ValidString(text) {
		return nil, &TextError{What: "text", Offset: invalidAt(text), Err: ErrInvalidUTF8}
	}
	var out []Token
	for _, seg := range t.raw.split(text, nil) {
		var err error
		if seg.tok != nil {
			out = append(out, Token{ID: seg.tok.ID, Value: seg.tok.Content, Start: seg.start, End: seg.end})
		} else if out, err = t.pipelineTokens(out, text[seg.start:seg.end], seg.start); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pipelineTokens encodes a part of the text without raw added tokens that
// starts at byte base.
func (t *Tokenizer) pipelineTokens(dst []Token, s string, base int) ([]Token, error) {
	if len(t.norm.byContent) == 0 {
		return t.encodePipeline(dst, s, base)
	}
	s = norm.NFC.String(s)
	var err error
	for _, seg := range t.norm.split(s, nil) {
		if seg.tok != nil {
			dst = append(dst, Token{ID: seg.tok.ID, Value: seg.tok.Content, Start: base + seg.start, End: base + seg.end})
		} else if dst, err = t.encodePipeline(dst, s[seg.start:seg.end], base+seg.start); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

func (t *Tokenizer) encodePipeline(dst []Token, s string, base int) ([]Token, error) {
	if s == "" {
		return dst, nil
	}
	enc, err := t.pipeline.EncodeSingle(s)
	if err != nil {
		return nil, fmt.Errorf("prompt: encode: %w", err)
	}
	for i, id := range enc.Ids {
		tok := Token{ID: id, Value: enc.Tokens[i]}
		if o := enc.Offsets[i]; len(o) == 2 {
			tok.Start, tok.End = base+o[0], base+o[1]
		}
		dst = append(dst, tok)
	}
	return dst, nil
}

// nfcNormalizer composes text to NFC in sugarme's NormalizedString, keeping
// the alignment with the original text. It replaces sugarme's own NFC
// normalizer, which decomposes (it iterates NFD) and so gives NFD text.
type nfcNormalizer struct{}

// Normalize implements sugarme's normalizer.Normalizer.
func (nfcNormalizer) Normalize(n *normalizer.NormalizedString) (*normalizer.NormalizedString, error) {
	s := n.GetNormalized()
	if norm.NFC.IsNormalString(s) {
		return n, nil
	}
	var changes []normalizer.ChangeMap
	var it norm.Iter
	it.InitString(norm.NFC, s)
	for !it.Done() {
		start := it.Pos()
		out := string(it.Next())
		had := utf8.RuneCountInString(s[start:it.Pos()])
		changes = appendChanges(changes, out, had)
	}
	return n.Transform(changes, 0), nil
}

// appendChanges maps one normalized segment out, made from had original
// characters, onto sugarme's change list: a character replacing one, then
// insertions (1) or, on the last character, removals (-N).
func appendChanges(dst []normalizer.ChangeMap, out string, had int) []normalizer.ChangeMap {
	i := 0
	for _, r := range out {
		c := 0
		if i >= had {
			c = 1
		}
		dst = append(dst, normalizer.ChangeMap{RuneVal: string(r), Changes: c})
		i++
	}
	if i < had && len(dst) > 0 {
		dst[len(dst)-1].Changes = -(had - i)
	}
	return dst
}
