package voices

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ConvertOptions supply what the target format needs and the input may not
// carry. The zero value adds nothing.
type ConvertOptions struct {
	// Source attests the voice's source when the input carries none. When
	// the input carries one, Source must be empty or equal to it: an
	// attestation is never rewritten.
	Source SourceKind
	// Note is the operator's note for drama3-http-voice/1. Empty keeps the
	// input's note.
	Note string
	// Origin names the input, such as "drama3-voice/1 sha256:<hex>"; a
	// drama3-http-voice/1 note ends with "from <Origin>".
	Origin string
	// Consent is the consent statement for a cloned voice made from an
	// input without one (self or consented sources need it).
	Consent *Consent
	// Created is the creation time of a cloned voice made from an input
	// without one.
	Created time.Time
	// ID and Name replace the input's when not empty.
	ID, Name string
	// Check tunes the validation of the input and the output; nil uses the
	// defaults.
	Check *Options
}

// Join records references joined to fit drama3-http-voice/1's four: the
// output reference now holds the input references First..Last (0-based, in
// order) with Frames frames.
type Join struct {
	First, Last int
	Frames      int
}

// Conversion is the result of Convert.
type Conversion struct {
	Voice *Voice
	// Joins lists the joins made, in the order made.
	Joins []Join
	// Dropped names the input's fields the target has no slot for, and
	// Derived the target's fields computed rather than copied.
	Dropped, Derived []string
}

// Convert converts v to the format to without re-encoding anything: codes
// are transposed or copied, never changed. To fit drama3-http-voice/1, more
// than four references are packed (see Pack). The result is checked against
// the target's rules; v must pass its own. Errors wrap ErrSource or ErrConsent when the target
// needs an attestation or a consent statement the input and opts lack,
// ErrNoFit when references cannot be packed, or are a *ValidationError.
func Convert(v *Voice, to Format, opts ConvertOptions) (*Conversion, error) {
	if !slices.Contains(Formats, to) {
		return nil, fmt.Errorf("%w: want one of %s, got %q", ErrUnknownFormat, formatList(), to)
	}
	if err := v.Validate(opts.Check); err != nil {
		return nil, err
	}
	out := &Voice{Format: to, ID: pick(opts.ID, v.ID), Name: pick(opts.Name, v.Name)}
	conv := &Conversion{Voice: out}
	out.References = cloneRefs(v.References)
	var err error
	switch to {
	case FormatCUDA:
		conv.toCUDA(v)
	case FormatMetal:
		err = conv.toMetal(v, opts)
	case FormatCloned:
		err = conv.toCloned(v, opts)
	}
	if err != nil {
		return nil, err
	}
	if err := out.Validate(opts.Check); err != nil {
		return nil, err
	}
	return conv, nil
}

func pick(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cloneRefs(refs []Reference) []Reference {
	out := make([]Reference, len(refs))
	for i, r := range refs {
		out[i] = Reference{Text: r.Text, Samples: r.Samples, Codes: r.Codes.Clone()}
	}
	return out
}

func (c *Conversion) toCUDA(v *Voice) {
	if v.Source != "" {
		c.Dropped = append(c.Dropped, "source")
	}
	if v.Note != "" {
		c.Dropped = append(c.Dropped, "note")
	}
	if v.Format == FormatCloned {
		c.Dropped = append(c.Dropped, "created", "consent", "samples")
	}
	c.Derived = append(c.Derived, "codes_sha256")
}

// resolveSource returns the attestation of the output.
func resolveSource(v *Voice, opts ConvertOptions) (SourceKind, error) {
	switch {
	case v.Source != "" && opts.Source != "" && v.Source != opts.Source:
		return "", fmt.Errorf("%w: the input attests source %q; %q contradicts it (an attestation is never rewritten)", ErrSource, v.Source, opts.Source)
	case v.Source != "":
		return v.Source, nil
	case opts.Source == "":
		return "", fmt.Errorf("%w: %s carries no source attestation: give one (synthetic, self or consented)", ErrSource, v.Format)
	}
	return opts.Source, nil
}

func (c *Conversion) toMetal(v *Voice, opts ConvertOptions) error {
	src, err := resolveSource(v, opts)
	if err != nil {
		return err
	}
	c.Voice.Source = src
	c.Voice.Note = metalNote(v, opts)
	if v.Format == FormatCloned {
		c.Dropped = append(c.Dropped, "created", "consent.statement", "samples")
	}
	if len(c.Voice.References) > MaxMetalReferences {
		refs, joins, err := Pack(c.Voice.References, MaxMetalReferences)
		if err != nil {
			return err
		}
		c.Voice.References, c.Joins = refs, joins
	}
	return nil
}

// metalNote composes a drama3-http-voice/1 note: the operator's note, the
// consent's who and when, and the origin, joined with "; ".
func metalNote(v *Voice, opts ConvertOptions) string {
	var parts []string
	if n := pick(opts.Note, v.Note); n != "" {
		parts = append(parts, n)
	}
	if v.Consent != nil {
		parts = append(parts, "consent: "+v.Consent.Who+", "+formatTime(v.Consent.When))
	}
	if opts.Origin != "" {
		parts = append(parts, "from "+opts.Origin)
	}
	return strings.Join(parts, "; ")
}

func (c *Conversion) toCloned(v *Voice, opts ConvertOptions) error {
	out := c.Voice
	src, err := resolveSource(v, opts)
	if err != nil {
		return err
	}
	out.Source = src
	if out.Created = v.Created; out.Created.IsZero() {
		out.Created = opts.Created.UTC()
		c.Derived = append(c.Derived, "created")
	}
	if out.Consent, err = resolveConsent(v, src, opts); err != nil {
		return err
	}
	if v.Note != "" {
		c.Dropped = append(c.Dropped, "note")
	}
	if v.Format != FormatCloned {
		c.Derived = append(c.Derived, "samples")
		return deriveSamples(out.References)
	}
	return nil
}

func resolveConsent(v *Voice, src SourceKind, opts ConvertOptions) (*Consent, error) {
	switch {
	case src == SourceSynthetic:
		return nil, nil
	case v.Consent != nil:
		c := *v.Consent
		return &c, nil
	case opts.Consent == nil:
		return nil, fmt.Errorf("%w: a %s clone needs a consent statement (who, when, statement) that %s does not carry: give one", ErrConsent, src, v.Format)
	}
	c := *opts.Consent
	c.When = c.When.UTC()
	return &c, nil
}

// deriveSamples sets each reference's samples, unknown outside cloned
// voices, to the largest count its frames allow (frames x 2048, at most
// 30 s), trimming the last reference by the few samples a full 60 s voice
// would exceed.
func deriveSamples(refs []Reference) error {
	total := 0
	for i := range refs {
		refs[i].Samples = min(refs[i].Codes.Frames()*SamplesPerFrame, MaxReferenceSamples)
		total += refs[i].Samples
	}
	if excess := total - MaxTotalSamples; excess > 0 && len(refs) > 0 {
		last := &refs[len(refs)-1]
		if framesFor(last.Samples-excess) != last.Codes.Frames() {
			return fmt.Errorf("%w: want at most %d samples in all (60 s), got %d", ErrLimit, MaxTotalSamples, total)
		}
		last.Samples -= excess
	}
	return nil
}

// Pack joins adjacent references until at most max remain: each step joins
// the adjacent pair with the fewest frames together whose join stays within
// MaxFrames, the leftmost on ties; transcripts are joined with a space and
// codes end to end. A joined reference's Samples is 0 (unknown). refs is not
// changed. The error wraps ErrNoFit when no pair fits before max is reached.
func Pack(refs []Reference, max int) ([]Reference, []Join, error) {
	type span struct{ first, last int }
	out := cloneRefs(refs)
	spans := make([]span, len(out))
	for i := range spans {
		spans[i] = span{i, i}
	}
	var joins []Join
	for len(out) > max {
		best := bestPair(out)
		if best < 0 {
			return nil, nil, fmt.Errorf("%w: want at most %d references, got %d and no adjacent pair joins within %d frames (frames: %s)", ErrNoFit, max, len(out), MaxFrames, framesList(out))
		}
		out[best] = joinRefs(out[best], out[best+1])
		spans[best].last = spans[best+1].last
		out = slices.Delete(out, best+1, best+2)
		spans = slices.Delete(spans, best+1, best+2)
		joins = append(joins, Join{First: spans[best].first, Last: spans[best].last, Frames: out[best].Codes.Frames()})
	}
	return out, joins, nil
}

// bestPair returns the left index of the adjacent pair with the smallest
// joined frame count within MaxFrames, the leftmost on ties, or -1.
func bestPair(refs []Reference) int {
	best, bestFrames := -1, 0
	for i := 0; i+1 < len(refs); i++ {
		n := refs[i].Codes.Frames() + refs[i+1].Codes.Frames()
		if n <= MaxFrames && (best < 0 || n < bestFrames) {
			best, bestFrames = i, n
		}
	}
	return best
}

func joinRefs(a, b Reference) Reference {
	c := make(Codes, len(a.Codes))
	for cb := range c {
		c[cb] = append(append(make([]int, 0, len(a.Codes[cb])+len(b.Codes[cb])), a.Codes[cb]...), b.Codes[cb]...)
	}
	return Reference{Text: a.Text + " " + b.Text, Codes: c}
}

func framesList(refs []Reference) string {
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = strconv.Itoa(r.Codes.Frames())
	}
	return strings.Join(s, ", ")
}
