package prompt

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// AddedToken is one entry of tokenizer.json's added_tokens: a string that is
// matched in the text before anything else and becomes one token.
type AddedToken struct {
	ID      int    // token id
	Content string // the exact string
	Special bool   // a control token of the model, such as <|im_start|>
	// SingleWord, LStrip, RStrip and Normalized are the matching options
	// Hugging Face's tokenizers define for an added token.
	SingleWord bool
	LStrip     bool
	RStrip     bool
	Normalized bool
}

// addedMatcher finds added tokens in text the way Hugging Face's added
// vocabulary does: the leftmost match wins, and of the matches starting
// there the longest.
type addedMatcher struct {
	byContent map[string]*AddedToken
	// lengths holds, for each first byte, the content lengths of the tokens
	// starting with it, longest first.
	lengths [256][]int
}

func newAddedMatcher(toks []*AddedToken) *addedMatcher {
	m := &addedMatcher{byContent: make(map[string]*AddedToken, len(toks))}
	for _, t := range toks {
		m.byContent[t.Content] = t
		c := t.Content[0]
		if !slices.Contains(m.lengths[c], len(t.Content)) {
			m.lengths[c] = append(m.lengths[c], len(t.Content))
		}
	}
	for c := range m.lengths {
		slices.SortFunc(m.lengths[c], func(a, b int) int { return b - a })
	}
	return m
}

// segment is a part of the text: an added token (tok != nil) or plain text.
type segment struct {
	start, end int
	tok        *AddedToken
}

// split cuts s into plain text and added tokens, in order and covering s.
func (m *addedMatcher) split(s string, dst []segment) []segment {
	last := 0
	for i := 0; i < len(s); i++ {
		t, end := m.matchAt(s, i)
		if t == nil {
			continue
		}
		start := i
		if t.LStrip {
			start = max(last, stripLeft(s, i))
		}
		if t.RStrip {
			end = stripRight(s, end)
		}
		if start > last {
			dst = append(dst, segment{start: last, end: start})
		}
		dst = append(dst, segment{start: start, end: end, tok: t})
		last = end
		i = end - 1
	}
	if last < len(s) {
		dst = append(dst, segment{start: last, end: len(s)})
	}
	return dst
}

// matchAt returns the longest added token that starts at i and may match
// there, and where it ends.
func (m *addedMatcher) matchAt(s string, i int) (*AddedToken, int) {
	for _, n := range m.lengths[s[i]] {
		if i+n > len(s) {
			continue
		}
		t, ok := m.byContent[s[i:i+n]]
		if ok && (!t.SingleWord || isWordBoundary(s, i, i+n)) {
			return t, i + n
		}
	}
	return nil, 0
}

// isWordBoundary reports whether s[start:end] has no word character right
// before or right after it.
func isWordBoundary(s string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:start])
		if isWordRune(r) {
			return false
		}
	}
	if end < len(s) {
		r, _ := utf8.DecodeRuneInString(s[end:])
		if isWordRune(r) {
			return false
		}
	}
	return true
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.No, r)
}

// stripLeft returns where the whitespace run that ends at i starts.
func stripLeft(s string, i int) int {
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsSpace(r) {
			break
		}
		i -= n
	}
	return i
}

// stripRight returns where the whitespace run that starts at i ends.
func stripRight(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}
