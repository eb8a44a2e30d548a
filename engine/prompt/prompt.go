package prompt

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/drama-tts/drama/voices"
)

// The fixed text of the prompt, as fish-speech's S2 inference writes it.
const (
	systemPlain = "convert the provided text to speech"
	systemRefs  = "convert the provided text to speech reference to the following:\n\nText:\n"
	speechHead  = "\n\nSpeech:\n"
)

// ErrCodes marks reference codes that are not NumCodebooks rows of equal,
// non-zero length with every code in its codebook's range.
var ErrCodes = errors.New("invalid reference codes")

// Prompt is a built prompt: the main row of token ids the backbone reads,
// and the reference codes it carries.
type Prompt struct {
	// IDs is the main row. Reference frame t is the id SemanticBegin+code
	// of its semantic codebook, at IDs[CodesStart+t].
	IDs []int
	// CodesStart is the index in IDs of the first reference frame.
	CodesStart int
	// Codes are all references' codes end to end, codebook-major; nil
	// without references.
	Codes voices.Codes
}

// Len returns the number of tokens: the prompt's length.
func (p *Prompt) Len() int { return len(p.IDs) }

// Rows returns the prompt as the model's input matrix: row 0 is IDs, row
// 1+c holds codebook c at the reference frames and 0 elsewhere.
func (p *Prompt) Rows() [][]int {
	rows := make([][]int, voices.NumCodebooks+1)
	rows[0] = append([]int(nil), p.IDs...)
	for c := range voices.NumCodebooks {
		rows[c+1] = make([]int, len(p.IDs))
		if c < len(p.Codes) {
			copy(rows[c+1][p.CodesStart:], p.Codes[c])
		}
	}
	return rows
}

// Builder builds Drama 3 prompts, as fish-speech builds them for S2:
//
//	<|im_start|>system\n
//	convert the provided text to speech reference to the following:\n\nText:\n
//	<|speaker:0|>{reference 0 text}\n<|speaker:1|>{reference 1 text}...
//	\n\nSpeech:\n{every reference's frames as semantic tokens}<|im_end|>\n
//	<|im_start|>user\n{text}<|im_end|>\n
//	<|im_start|>assistant\n<|voice|>
//
// Without references the system text is "convert the provided text to
// speech". Each part is encoded on its own, as the reference does. A
// Builder is safe for concurrent use.
type Builder struct {
	tok      *Tokenizer
	begin    int
	limits   Limits
	specials []string
	// Pre-encoded fixed parts.
	sysStart, sysPlain, sysRefs, speech, imEnd, userStart, assistant []int
}

// NewBuilder returns a Builder over tok that refuses prompts over lim. The
// tokenizer must have the semantic tokens (see SemanticBegin) and
// <|im_start|>, <|im_end|> and <|voice|>.
func NewBuilder(tok *Tokenizer, lim Limits) (*Builder, error) {
	begin, err := tok.SemanticBegin()
	if err != nil {
		return nil, err
	}
	for _, s := range []string{"<|im_start|>", "<|im_end|>", "<|voice|>"} {
		if _, ok := tok.ID(s); !ok {
			return nil, &FormatError{File: tok.name, Field: "added_tokens", Err: fmt.Errorf("no %s: not a Drama tokenizer", s)}
		}
	}
	b := &Builder{tok: tok, begin: begin, limits: lim, specials: voices.TranscriptSpecials(tok.SpecialTokens())}
	for _, p := range []struct {
		dst  *[]int
		text string
	}{
		{&b.sysStart, "<|im_start|>system\n"}, {&b.sysPlain, systemPlain}, {&b.sysRefs, systemRefs},
		{&b.speech, speechHead}, {&b.imEnd, "<|im_end|>\n"}, {&b.userStart, "<|im_start|>user\n"},
		{&b.assistant, "<|im_start|>assistant\n<|voice|>"},
	} {
		if *p.dst, err = tok.Encode(p.text); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Limits returns the limits the Builder enforces.
func (b *Builder) Limits() Limits { return b.limits }

// WithLimits returns a Builder that shares b's tokenizer and enforces lim:
// for example a request's own reply reserve (its frame limit plus one for
// <|im_end|>).
func (b *Builder) WithLimits(lim Limits) *Builder {
	c := *b
	c.limits = lim
	return &c
}

// Build builds the prompt for text spoken in the voice of refs (none for the
// model's own voice). It refuses text that is empty or holds the prompt's
// structural tokens (*TextError wrapping ErrStructuralToken), reference
// transcripts that break the voices transcript rule, invalid codes
// (ErrCodes), and a prompt over the limits (*TooLongError, ErrTooLong);
// the prompt built so far is returned with a TooLongError.
func (b *Builder) Build(text string, refs []voices.Reference) (*Prompt, error) {
	return b.build(text, refs, true)
}

// build builds the prompt; without codes it leaves Prompt.Codes nil, for
// Count, which needs only the length.
func (b *Builder) build(text string, refs []voices.Reference, codes bool) (*Prompt, error) {
	if err := b.checkText(text); err != nil {
		return nil, err
	}
	p := &Prompt{IDs: append([]int(nil), b.sysStart...)}
	if len(refs) == 0 {
		p.IDs = append(p.IDs, b.sysPlain...)
	} else if err := b.appendReferences(p, refs, codes); err != nil {
		return nil, err
	}
	p.IDs = append(p.IDs, b.imEnd...)
	p.IDs = append(p.IDs, b.userStart...)
	ids, err := b.tok.Encode(text)
	if err != nil {
		return nil, err
	}
	p.IDs = append(append(p.IDs, ids...), b.imEnd...)
	p.IDs = append(p.IDs, b.assistant...)
	return p, b.limits.Check(p.Len())
}

// Count returns the number of tokens of the prompt Build would build, and
// Build's error, without copying the references' codes.
func (b *Builder) Count(text string, refs []voices.Reference) (int, error) {
	p, err := b.build(text, refs, false)
	if p == nil {
		return 0, err
	}
	return p.Len(), err
}

func (b *Builder) checkText(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return &TextError{What: "text", Offset: 0, Err: errors.New("empty: want the text to speak")}
	case !utf8.ValidString(text):
		return &TextError{What: "text", Offset: invalidAt(text), Err: ErrInvalidUTF8}
	}
	return b.tok.CheckText("text", text)
}

// appendReferences adds the reference block of the system message, and the
// references' codes end to end to p.Codes when codes is set.
func (b *Builder) appendReferences(p *Prompt, refs []voices.Reference, codes bool) error {
	tagged := make([]string, len(refs))
	frames := 0
	for i, r := range refs {
		if err := voices.CheckTranscript(r.Text, b.specials); err != nil {
			return fmt.Errorf("prompt: reference %d text: %w", i, err)
		}
		if err := checkCodes(r.Codes); err != nil {
			return fmt.Errorf("prompt: reference %d codes: %w", i, err)
		}
		tagged[i] = fmt.Sprintf("<|speaker:%d|>%s", i, r.Text)
		frames += r.Codes.Frames()
	}
	p.IDs = append(p.IDs, b.sysRefs...)
	ids, err := b.tok.Encode(strings.Join(tagged, "\n"))
	if err != nil {
		return err
	}
	p.IDs = append(append(p.IDs, ids...), b.speech...)
	p.CodesStart = len(p.IDs)
	p.IDs = slices.Grow(p.IDs, frames)
	for _, r := range refs {
		for _, code := range r.Codes[0] {
			p.IDs = append(p.IDs, b.begin+code)
		}
	}
	if !codes {
		return nil
	}
	p.Codes = make(voices.Codes, voices.NumCodebooks)
	for c := range p.Codes {
		p.Codes[c] = make([]int, 0, frames)
		for _, r := range refs {
			p.Codes[c] = append(p.Codes[c], r.Codes[c]...)
		}
	}
	return nil
}

// checkCodes checks the shape and ranges of one reference's codes.
func checkCodes(c voices.Codes) error {
	if len(c) != voices.NumCodebooks {
		return fmt.Errorf("%w: want %d codebooks, got %d", ErrCodes, voices.NumCodebooks, len(c))
	}
	frames := c.Frames()
	if frames == 0 {
		return fmt.Errorf("%w: no frames", ErrCodes)
	}
	for cb, row := range c {
		if len(row) != frames {
			return fmt.Errorf("%w: codebook %d: want %d frames, got %d", ErrCodes, cb, frames, len(row))
		}
		limit := voices.CodebookSize(cb)
		for t, v := range row {
			if v < 0 || v >= limit {
				return fmt.Errorf("%w: codebook %d frame %d: want 0..%d, got %d", ErrCodes, cb, t, limit-1, v)
			}
		}
	}
	return nil
}
