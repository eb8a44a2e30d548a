package prompt

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sugarme/tokenizer"
	"golang.org/x/text/unicode/norm"
)

// Tokenizer turns text into the token ids of a byte-level BPE tokenizer read
// from a Hugging Face tokenizer.json, giving the same ids as Hugging Face's
// tokenizers. It is safe for concurrent use.
type Tokenizer struct {
	name     string
	model    *bpeModel
	split    *splitter
	nfc      bool
	pipeline *tokenizer.Tokenizer

	added     []*AddedToken // by id
	byID      map[int]*AddedToken
	raw, norm *addedMatcher // tokens matched before and after normalizing
}

func newTokenizer(m *bpeModel, nfc bool, sp *splitter, added []*AddedToken) *Tokenizer {
	t := &Tokenizer{model: m, split: sp, nfc: nfc, pipeline: pipeline(m, nfc, sp), added: added,
		byID: make(map[int]*AddedToken, len(added))}
	var raw, normd []*AddedToken
	for _, a := range added {
		t.byID[a.ID] = a
		if a.Normalized && nfc {
			normd = append(normd, a)
		} else {
			raw = append(raw, a)
		}
	}
	t.raw, t.norm = newAddedMatcher(raw), newAddedMatcher(normd)
	return t
}

// Name returns the file the tokenizer was read from ("tokenizer.json" when
// it came from a reader).
func (t *Tokenizer) Name() string { return t.name }

// Encode returns the ids of text, with inline added tokens such as
// <|im_start|> as their own ids and no other special tokens added, as Hugging
// Face's encode(text, add_special_tokens=False) gives them.
func (t *Tokenizer) Encode(text string) ([]int, error) {
	return t.appendIDs(make([]int, 0, len(text)/4+1), text)
}

// Count returns how many tokens Encode would return for text.
func (t *Tokenizer) Count(text string) (int, error) {
	ids, err := t.appendIDs(nil, text)
	return len(ids), err
}

// Tokens returns the token strings of ids, as the vocabulary writes them
// (byte-level: a space is "Ġ"). An id outside the vocabulary is an error.
func (t *Tokenizer) Tokens(ids []int) ([]string, error) {
	out := make([]string, len(ids))
	for i, id := range ids {
		tok, ok := t.Token(id)
		if !ok {
			return nil, fmt.Errorf("prompt: token id %d at %d: not in %s", id, i, t.name)
		}
		out[i] = tok
	}
	return out, nil
}

// Token returns the string of one token id.
func (t *Tokenizer) Token(id int) (string, bool) {
	if a, ok := t.byID[id]; ok {
		return a.Content, true
	}
	s, ok := (*t.model.VocabR)[id]
	return s, ok
}

// TokenBytes returns the text a token id stands for: an added token's
// content, or the bytes of a byte-level vocabulary entry (which may be part
// of a multi-byte character).
func (t *Tokenizer) TokenBytes(id int) ([]byte, bool) {
	if a, ok := t.byID[id]; ok {
		return []byte(a.Content), true
	}
	s, ok := (*t.model.VocabR)[id]
	if !ok {
		return nil, false
	}
	return unByteLevel(s)
}

// ID returns the id of a token string: an added token's content or a
// vocabulary entry in its byte-level form.
func (t *Tokenizer) ID(tok string) (int, bool) {
	if a, ok := t.raw.byContent[tok]; ok {
		return a.ID, true
	}
	if a, ok := t.norm.byContent[tok]; ok {
		return a.ID, true
	}
	id, ok := (*t.model.Vocab)[tok]
	return id, ok
}

// AddedTokens returns the added tokens of the file, by id. The slice is a
// copy; the tokens are shared and must not be changed.
func (t *Tokenizer) AddedTokens() []*AddedToken { return slices.Clone(t.added) }

// appendIDs appends the ids of text to dst.
func (t *Tokenizer) appendIDs(dst []int, text string) ([]int, error) {
	if !utf8.ValidString(text) {
		return dst, &TextError{What: "text", Offset: invalidAt(text), Err: ErrInvalidUTF8}
	}
	var err error
	for _, seg := range t.raw.split(text, nil) {
		if seg.tok != nil {
			dst = append(dst, seg.tok.ID)
			continue
		}
		if dst, err = t.appendNormalized(dst, text[seg.start:seg.end]); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// appendNormalized normalizes s, finds the added tokens that match on
// normalized text, and encodes the rest.
func (t *Tokenizer) appendNormalized(dst []int, s string) ([]int, error) {
	if t.nfc {
		s = norm.NFC.String(s)
	}
	var err error
	for _, seg := range t.norm.split(s, nil) {
		if seg.tok != nil {
			dst = append(dst, seg.tok.ID)
			continue
		}
		if dst, err = t.appendPlain(dst, s[seg.start:seg.end]); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// appendPlain encodes normalized text without added tokens: the pieces of
// the pre-tokenizer, each through the BPE model.
func (t *Tokenizer) appendPlain(dst []int, s string) ([]int, error) {
	sp := spanPool.Get().(*[][2]int)
	defer spanPool.Put(sp)
	spans, err := t.split.spans(s, (*sp)[:0])
	*sp = spans
	if err != nil {
		return dst, &TextError{What: "text", Offset: 0, Err: err}
	}
	for _, r := range spans {
		dst = t.model.appendIDs(dst, s[r[0]:r[1]])
	}
	return dst, nil
}

var spanPool = sync.Pool{New: func() any { return new([][2]int) }}

// invalidAt returns the byte offset of the first invalid UTF-8 sequence.
func invalidAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return len(s)
}

// CheckText returns a *TextError wrapping ErrStructuralToken when text holds
// one of the tokenizer's added tokens, or the "<|" or "|>" that open and close
// the prompt's structural tokens (such as <|speaker:0|>, which is not an added
// token but is parsed as a marker). what names the text in the message.
func (t *Tokenizer) CheckText(what, text string) error {
	for _, mark := range []string{"<|", "|>"} {
		if i := strings.Index(text, mark); i >= 0 {
			return &TextError{What: what, Offset: i, Err: fmt.Errorf("%w: %q", ErrStructuralToken, mark)}
		}
	}
	for _, m := range []*addedMatcher{t.raw, t.norm} {
		for _, seg := range m.split(text, nil) {
			if seg.tok != nil {
				return &TextError{What: what, Offset: seg.start, Err: fmt.Errorf("%w: %q", ErrStructuralToken, seg.tok.Content)}
			}
		}
	}
	return nil
}
