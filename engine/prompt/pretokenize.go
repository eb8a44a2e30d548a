package prompt

import (
	"fmt"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/normalizer"
)

// gpt2Pattern is the split pattern of a ByteLevel pre-tokenizer whose
// use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// matchTimeout bounds one regular-expression search. The patterns in use run
// in linear time on real text; the bound only keeps a hostile pattern in a
// hostile file from hanging the process.
const matchTimeout = 10 * time.Second

// splitter is the pre-tokenizer: it cuts normalized text into the pieces that
// BPE encodes one by one, keeping each match of the split pattern as a piece
// of its own ("Isolated") and the text between matches as pieces too.
//
// The pattern runs on dlclark/regexp2 with .NET semantics, not its RE2
// option: the Qwen pattern needs the (?!\S) lookahead, and under RE2 \s
// would be ASCII-only, so a no-break space or an ideographic space would not
// count as a space as it does for Hugging Face's tokenizers (Oniguruma).
// The byte-level mapping happens in the BPE model, so pieces stay plain text.
type splitter struct {
	re *regexp2.Regexp
	// scan, when set, replaces the regular expression: a scanner proven
	// equal to it on its pattern.
	scan func(s string, dst [][2]int) [][2]int
}

var _ tokenizer.PreTokenizer = (*splitter)(nil)

func newSplitter(pattern string) (*splitter, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = matchTimeout
	sp := &splitter{re: re}
	if pattern == qwenPattern {
		sp.scan = qwenSpans
	}
	return sp, nil
}

// PreTokenize splits every piece of pts that has no tokens yet. It
// implements sugarme's tokenizer.PreTokenizer.
func (p *splitter) PreTokenize(pts *tokenizer.PreTokenizedString) (*tokenizer.PreTokenizedString, error) {
	var err error
	pts.Split(func(_ int, ns *normalizer.NormalizedString) []tokenizer.SplitIdx {
		spans, e := p.spans(ns.GetNormalized(), nil)
		if e != nil {
			err = e
			return nil
		}
		out := make([]tokenizer.SplitIdx, len(spans))
		for i, sp := range spans {
			out[i] = tokenizer.SplitIdx{Normalized: ns.Slice(normalizer.NewRange(sp[0], sp[1], normalizer.NormalizedTarget))}
		}
		return out
	})
	return pts, err
}

// spans appends to dst the byte ranges of the pieces of s, in order and
// covering s. s must be valid UTF-8.
func (p *splitter) spans(s string, dst [][2]int) ([][2]int, error) {
	if s == "" {
		return dst, nil
	}
	if p.scan != nil {
		return p.scan(s, dst), nil
	}
	return p.regexpSpans(s, dst)
}

// regexpSpans is spans by the regular expression.
func (p *splitter) regexpSpans(s string, dst [][2]int) ([][2]int, error) {
	runes := []rune(s)
	offs := make([]int, len(runes)+1) // byte offset of each rune
	b := 0
	for i, r := range runes {
		offs[i] = b
		b += runeLen(r)
	}
	offs[len(runes)] = b
	last := 0
	m, err := p.re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = p.re.FindNextMatch(m) {
		if m.Length == 0 {
			continue
		}
		if m.Index > last {
			dst = append(dst, [2]int{offs[last], offs[m.Index]})
		}
		last = m.Index + m.Length
		dst = append(dst, [2]int{offs[m.Index], offs[last]})
	}
	if err != nil {
		return dst, fmt.Errorf("split pattern: %w", err)
	}
	if last < len(runes) {
		dst = append(dst, [2]int{offs[last], offs[len(runes)]})
	}
	return dst, nil
}

func runeLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	default:
		return 4
	}
}
