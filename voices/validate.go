package voices

import (
	"fmt"
	"slices"
	"strings"

	"github.com/drama-tts/drama/internal/model"
)

// Validate checks every rule of v's format and returns a *ValidationError
// listing each problem, or nil. opts may be nil.
func (v *Voice) Validate(opts *Options) error {
	var p problems
	v.validate(opts, &p, nil)
	return p.err("")
}

// validate adds v's problems to p. References in skip had unreadable codes,
// already reported.
func (v *Voice) validate(opts *Options, p *problems, skip map[int]bool) {
	if !slices.Contains(Formats, v.Format) {
		p.addf("format", ErrUnknownFormat, "want one of %s, got %q", formatList(), v.Format)
		return
	}
	if err := CheckID(v.ID); err != nil {
		p.add("id", -1, err)
	}
	if err := checkPlain(v.Name, MaxNameRunes, false); err != nil {
		p.add("name", -1, fmt.Errorf("%w: %w", ErrText, err))
	}
	v.validateRefs(opts, p, skip)
	switch v.Format {
	case FormatMetal:
		v.validateMetal(p)
	case FormatCloned:
		v.validateCloned(p)
	}
}

// CheckID checks a voice id: 1 to 64 characters of a-z, 0-9, '_' and '-',
// starting with a letter or digit. The error wraps ErrID.
func CheckID(id string) error {
	if err := model.CheckID(id); err != nil {
		return fmt.Errorf("%w: %v", ErrID, err)
	}
	return nil
}

func (v *Voice) maxRefs() int {
	if v.Format == FormatMetal {
		return MaxMetalReferences
	}
	return MaxReferences
}

func (v *Voice) validateRefs(opts *Options, p *problems, skip map[int]bool) {
	if n := len(v.References); n < 1 || n > v.maxRefs() {
		p.addf("references", ErrLimit, "want 1 to %d references for %s, got %d%s", v.maxRefs(), v.Format, n, packHint(v.Format, n))
	}
	frames, samples := 0, 0
	for i, r := range v.References {
		if err := CheckTranscript(r.Text, opts.specials()); err != nil {
			p.add(refField(i, "text"), -1, err)
		}
		if !skip[i] {
			checkCodes(p, i, r.Codes)
		}
		if v.Format == FormatCloned {
			checkSamples(p, i, r)
		}
		frames += r.Codes.Frames()
		samples += r.Samples
	}
	if v.Format == FormatCUDA && frames > MaxTotalFrames {
		p.addf("references", ErrLimit, "want at most %d frames in all (60 s), got %d", MaxTotalFrames, frames)
	}
	if v.Format == FormatCloned && samples > MaxTotalSamples {
		p.addf("references", ErrLimit, "want at most %d samples in all (60 s), got %d", MaxTotalSamples, samples)
	}
}

// checkCodes checks one reference's codes: shape, frame count and ranges.
func checkCodes(p *problems, i int, c Codes) {
	field := refField(i, "codes")
	if len(c) != NumCodebooks {
		p.addf(field, ErrShape, "want %d codebooks, got %d", NumCodebooks, len(c))
		return
	}
	t := c.Frames()
	if t < 1 || t > MaxFrames {
		p.addf(refField(i, "frames"), ErrLimit, "want 1 to %d frames, got %d", MaxFrames, t)
	}
	for cb, row := range c {
		if len(row) != t {
			p.addf(field, ErrShape, "want %d frames in codebook %d like codebook 0, got %d", t, cb, len(row))
			return
		}
		checkRange(p, field, cb, row)
	}
}

func checkRange(p *problems, field string, cb int, row []int) {
	limit := CodebookSize(cb)
	first, bad := -1, 0
	for t, x := range row {
		if x < 0 || x >= limit {
			if first < 0 {
				first = t
			}
			bad++
		}
	}
	if bad > 0 {
		p.addf(field, ErrCodeRange, "codebook %d frame %d: want 0 to %d, got %d (%d codes out of range in this codebook): these are not Drama 3 codec codes", cb, first, limit-1, row[first], bad)
	}
}

func checkSamples(p *problems, i int, r Reference) {
	field := refField(i, "samples")
	if r.Samples < 1 || r.Samples > MaxReferenceSamples {
		p.addf(field, ErrLimit, "want 1 to %d samples (30 s), got %d", MaxReferenceSamples, r.Samples)
		return
	}
	if want := framesFor(r.Samples); r.Codes.Frames() != want && len(r.Codes) == NumCodebooks {
		p.addf(refField(i, "frames"), ErrFrames, "want %d (ceil(samples/%d) for %d samples), got %d", want, SamplesPerFrame, r.Samples, r.Codes.Frames())
	}
}

func checkSource(p *problems, s SourceKind) {
	switch s {
	case SourceSynthetic, SourceSelf, SourceConsented:
	default:
		p.addf("source.kind", ErrSource, "want synthetic, self or consented, got %q", s)
	}
}

func (v *Voice) validateMetal(p *problems) {
	checkSource(p, v.Source)
	if v.Note == "" {
		return
	}
	if err := checkPlain(v.Note, MaxNoteRunes, false); err != nil {
		p.add("note", -1, fmt.Errorf("%w: %w", ErrText, err))
	}
}

func (v *Voice) validateCloned(p *problems) {
	checkSource(p, v.Source)
	if v.Created.IsZero() {
		p.addf("created", ErrConsent, "want the time the voice was made")
	}
	if v.Source == SourceSynthetic {
		if v.Consent != nil {
			p.addf("consent", ErrConsent, "want null for a synthetic voice, which no person consented to")
		}
		return
	}
	if v.Consent == nil {
		p.addf("consent", ErrConsent, "a %s voice needs a consent statement (who, when, statement)", v.Source)
		return
	}
	v.validateConsent(p)
}

func (v *Voice) validateConsent(p *problems) {
	c := v.Consent
	if err := checkPlain(c.Who, MaxWhoRunes, false); err != nil {
		p.add("consent.who", -1, fmt.Errorf("%w: %w", ErrConsent, err))
	}
	if err := checkPlain(c.Statement, MaxTextRunes, true); err != nil {
		p.add("consent.statement", -1, fmt.Errorf("%w: %w", ErrConsent, err))
	}
	switch {
	case c.When.IsZero():
		p.addf("consent.when", ErrConsent, "want the time consent was given")
	case !v.Created.IsZero() && c.When.After(v.Created):
		p.addf("consent.when", ErrConsent, "want a time no later than created (%s), got %s", formatTime(v.Created), formatTime(c.When))
	}
}

// Validate checks one reference on its own, as a request's reference is
// checked before it reaches the engine: the transcript rule, ten codebooks,
// 1 to 646 frames and the code ranges. Fields are named "text" and
// "codes"; the error is a *ValidationError or nil. opts may be nil.
func (r Reference) Validate(opts *Options) error {
	var p problems
	if err := CheckTranscript(r.Text, opts.specials()); err != nil {
		p.add("text", -1, err)
	}
	checkCodes(&p, 0, r.Codes)
	for _, fe := range p.list {
		fe.Field = strings.TrimPrefix(fe.Field, refField(0, ""))
		fe.Field = strings.TrimPrefix(fe.Field, ".")
	}
	return p.err("")
}

// packHint says how to fit too many references into the Metal catalog.
func packHint(f Format, n int) string {
	if f == FormatMetal && n > MaxMetalReferences {
		return ": convert the drama3-voice/1 or cloned voice to drama3-http-voice/1, which joins references to fit"
	}
	return ""
}
