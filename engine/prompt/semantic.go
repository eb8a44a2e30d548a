package prompt

import "fmt"

// SemanticTokens is the number of semantic tokens, one per value of the
// codec's semantic codebook (codebook 0).
const SemanticTokens = 4096

// SemanticToken returns the name of semantic token i, <|semantic:i|>.
func SemanticToken(i int) string { return fmt.Sprintf("<|semantic:%d|>", i) }

// SemanticBegin returns the id of <|semantic:0|>. The 4096 semantic tokens
// are looked up by name and must have contiguous ids, because a prompt holds
// semantic code c as the id SemanticBegin()+c; otherwise the error wraps
// ErrSemantic and names the first token that breaks the rule.
func (t *Tokenizer) SemanticBegin() (int, error) {
	begin, ok := t.ID(SemanticToken(0))
	if !ok {
		return 0, &FormatError{File: t.name, Field: "added_tokens", Err: fmt.Errorf("%w: no %s", ErrSemantic, SemanticToken(0))}
	}
	for i := 1; i < SemanticTokens; i++ {
		id, ok := t.ID(SemanticToken(i))
		switch {
		case !ok:
			return 0, &FormatError{File: t.name, Field: "added_tokens", Err: fmt.Errorf("%w: no %s", ErrSemantic, SemanticToken(i))}
		case id != begin+i:
			return 0, &FormatError{File: t.name, Field: "added_tokens",
				Err: fmt.Errorf("%w: %s: want id %d, got %d", ErrSemantic, SemanticToken(i), begin+i, id)}
		}
	}
	return begin, nil
}

// SpecialTokens returns the content of every added token, for the rule that
// a transcript must not hold one; voices.TranscriptSpecials turns it into
// voices.Options.SpecialTokens.
func (t *Tokenizer) SpecialTokens() []string {
	out := make([]string, len(t.added))
	for i, a := range t.added {
		out[i] = a.Content
	}
	return out
}
