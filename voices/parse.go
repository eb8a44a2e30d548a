package voices

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"
)

// wireVoice holds a voice file as read, before its format's rules apply: the
// union of every format's fields.
type wireVoice struct {
	keys                            []keyAt
	format, id, name, note, created string
	source                          *wireSource
	consent                         *wireConsent
	refs                            []wireRef
	refsOff                         int64
}

type wireSource struct {
	keys []keyAt
	off  int64
	kind string
}

type wireConsent struct {
	keys                 []keyAt
	off                  int64
	who, when, statement string
}

type wireRef struct {
	keys            []keyAt
	off             int64
	text, sha       string
	frames, samples int
	vq, codes       [][]int
}

// The fields of each format, in canonical order.
var (
	topFields = map[Format][]string{
		FormatCUDA:   {"format", "id", "name", "references"},
		FormatMetal:  {"format", "id", "name", "source", "note", "references"},
		FormatCloned: {"format", "id", "name", "created", "source", "consent", "references"},
	}
	refFields = map[Format][]string{
		FormatCUDA:   {"text", "frames", "codes_sha256", "vq_codes"},
		FormatMetal:  {"text", "frames", "codes"},
		FormatCloned: {"text", "samples", "frames", "codes"},
	}
	sourceFields  = []string{"kind"}
	consentFields = []string{"who", "when", "statement"}
)

// Parse reads a voice file in any of the formats, strictly, and checks every
// rule of its format. A syntax or structure error stops the reading and is
// returned as a *FieldError; rule violations are all collected into one
// *ValidationError, returned together with the voice as read so that callers
// can still show it. opts may be nil.
func Parse(data []byte, opts *Options) (*Voice, error) {
	return parseNamed("", data, opts)
}

func parseNamed(file string, data []byte, opts *Options) (*Voice, error) {
	if len(data) > MaxFileSize {
		return nil, &FieldError{File: file, Offset: -1, Err: fmt.Errorf("%w: want at most %d bytes, got %d", ErrTooLarge, MaxFileSize, len(data))}
	}
	w, err := readWire(data)
	if err != nil {
		if fe, ok := err.(*FieldError); ok {
			fe.File = file
		}
		return nil, err
	}
	var p problems
	v, skip := w.toVoice(&p)
	if v == nil {
		return nil, p.err(file)
	}
	if v.Format == FormatMetal && len(data) > MaxMetalFileSize {
		p.addf("", ErrTooLarge, "want at most %d bytes for %s, got %d", MaxMetalFileSize, FormatMetal, len(data))
	}
	v.validate(opts, &p, skip)
	return v, p.err(file)
}

// readWire parses the JSON of a voice file.
func readWire(data []byte) (*wireVoice, error) {
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, &FieldError{Offset: 0, Err: fmt.Errorf("%w: file starts with a byte order mark; save it as UTF-8 without one", ErrSyntax)}
	}
	p := &parser{data: data}
	if err := notAnObject(p); err != nil {
		return nil, err
	}
	w := &wireVoice{}
	keys, err := p.object("", w.field(p))
	w.keys = keys
	if err != nil {
		return nil, err
	}
	if p.peek() != 0 {
		return nil, p.fail("", ErrSyntax, "data after the end of the voice object")
	}
	return w, nil
}

func (w *wireVoice) field(p *parser) func(string, int64) error {
	return func(key string, _ int64) (err error) {
		switch key {
		case "format":
			w.format, err = p.str(key)
		case "id":
			w.id, err = p.str(key)
		case "name":
			w.name, err = p.str(key)
		case "note":
			w.note, err = p.str(key)
		case "created":
			w.created, err = p.str(key)
		case "source":
			w.source, err = readSource(p)
		case "consent":
			w.consent, err = readConsent(p)
		case "references":
			w.refsOff = int64(p.pos)
			err = p.array(key, func(i int) error {
				r, err := readRef(p, refField(i, ""))
				w.refs = append(w.refs, r)
				return err
			})
		default:
			err = p.skip(key)
		}
		return err
	}
}

func readSource(p *parser) (*wireSource, error) {
	s := &wireSource{off: int64(p.pos)}
	keys, err := p.object("source", func(key string, _ int64) (err error) {
		if key == "kind" {
			s.kind, err = p.str("source.kind")
			return err
		}
		return p.skip("source." + key)
	})
	s.keys = keys
	return s, err
}

func readConsent(p *parser) (*wireConsent, error) {
	if p.null() {
		return nil, nil
	}
	c := &wireConsent{off: int64(p.pos)}
	keys, err := p.object("consent", func(key string, _ int64) (err error) {
		f := "consent." + key
		switch key {
		case "who":
			c.who, err = p.str(f)
		case "when":
			c.when, err = p.str(f)
		case "statement":
			c.statement, err = p.str(f)
		default:
			err = p.skip(f)
		}
		return err
	})
	c.keys = keys
	return c, err
}

func readRef(p *parser, field string) (wireRef, error) {
	r := wireRef{off: int64(p.pos)}
	keys, err := p.object(field, func(key string, _ int64) (err error) {
		f := field + "." + key
		switch key {
		case "text":
			r.text, err = p.str(f)
		case "codes_sha256":
			r.sha, err = p.str(f)
		case "frames":
			r.frames, err = p.integer(f)
		case "samples":
			r.samples, err = p.integer(f)
		case "vq_codes":
			r.vq, err = p.intMatrix(f, MaxFrames, MaxFrames)
		case "codes":
			r.codes, err = p.intMatrix(f, MaxFrames, MaxFrames)
		default:
			err = p.skip(f)
		}
		return err
	})
	r.keys = keys
	return r, err
}

// checkKeys reports fields outside want and fields of want that are absent.
func checkKeys(p *problems, field string, f Format, keys []keyAt, want []string) {
	for _, k := range keys {
		if !slices.Contains(want, k.name) {
			p.add(join(field, k.name), k.off, fmt.Errorf("%w: %s has no field %q (fields: %s)", ErrUnknownField, f, k.name, strings.Join(want, ", ")))
		}
	}
	for _, name := range want {
		if !slices.ContainsFunc(keys, func(k keyAt) bool { return k.name == name }) {
			p.addf(join(field, name), ErrMissingField, "%s requires it: add it", f)
		}
	}
}

// toVoice applies the format's layout to the wire form. It returns nil when
// the format is unknown, and the references whose codes could not be read.
func (w *wireVoice) toVoice(p *problems) (*Voice, map[int]bool) {
	f := Format(w.format)
	if !slices.ContainsFunc(w.keys, func(k keyAt) bool { return k.name == "format" }) {
		p.addf("format", ErrMissingField, "not a voice file: want a format field (%s)", formatList())
		return nil, nil
	}
	if !slices.Contains(Formats, f) {
		p.addf("format", ErrUnknownFormat, "want one of %s, got %q", formatList(), w.format)
		return nil, nil
	}
	checkKeys(p, "", f, w.keys, topFields[f])
	v := &Voice{Format: f, ID: w.id, Name: w.name, Note: w.note}
	w.convertSource(p, v)
	w.convertCloned(p, v)
	skip := map[int]bool{}
	for i, r := range w.refs {
		checkKeys(p, refField(i, ""), f, r.keys, refFields[f])
		ref, ok := r.toReference(p, f, i)
		if !ok {
			skip[i] = true
		}
		v.References = append(v.References, ref)
	}
	return v, skip
}

func (w *wireVoice) convertSource(p *problems, v *Voice) {
	if w.source == nil {
		return
	}
	checkKeys(p, "source", v.Format, w.source.keys, sourceFields)
	v.Source = SourceKind(w.source.kind)
}

func (w *wireVoice) convertCloned(p *problems, v *Voice) {
	if v.Format != FormatCloned {
		return
	}
	v.Created = parseTime(p, "created", w.created)
	if w.consent == nil {
		return
	}
	checkKeys(p, "consent", v.Format, w.consent.keys, consentFields)
	v.Consent = &Consent{Who: w.consent.who, Statement: w.consent.statement}
	v.Consent.When = parseTime(p, "consent.when", w.consent.when)
}

// parseTime reads an RFC 3339 time in UTC written with a trailing "Z".
func parseTime(p *problems, field, s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !strings.HasSuffix(s, "Z") {
		p.addf(field, ErrConsent, "want an RFC 3339 time in UTC such as 2026-05-01T12:00:00Z, got %q", s)
		return time.Time{}
	}
	return t.UTC()
}

// toReference reads one reference's codes in the format's layout. ok is
// false when the codes could not be read into a well-formed matrix.
func (r *wireRef) toReference(p *problems, f Format, i int) (Reference, bool) {
	ref := Reference{Text: r.text, Samples: r.samples}
	var ok bool
	switch f {
	case FormatMetal:
		ref.Codes, ok = frameMajor(p, refField(i, "codes"), r.codes)
	case FormatCUDA:
		ref.Codes, ok = codebookMajor(p, refField(i, "vq_codes"), r.vq)
	default:
		ref.Codes, ok = codebookMajor(p, refField(i, "codes"), r.codes)
	}
	if !ok {
		return ref, false
	}
	if got := ref.Codes.Frames(); r.frames != got {
		p.addf(refField(i, "frames"), ErrFrames, "want %d (the codes' frames), got %d: the codes or the count were edited", got, r.frames)
	}
	if f == FormatCUDA {
		r.checkSHA(p, i, ref.Codes)
	}
	return ref, true
}

func (r *wireRef) checkSHA(p *problems, i int, c Codes) {
	field := refField(i, "codes_sha256")
	if !isLowerHex(r.sha, 64) {
		p.addf(field, ErrChecksum, "want 64 lowercase hex digits, got %q", r.sha)
		return
	}
	if got := c.SHA256(); got != r.sha {
		p.addf(field, ErrChecksum, "want %s (the file's codes_sha256), got %s (computed from vq_codes): the codes changed after the digest was made; export the voice again from its source", r.sha, got)
	}
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// codebookMajor checks a [10][frames] matrix.
func codebookMajor(p *problems, field string, m [][]int) (Codes, bool) {
	if len(m) != NumCodebooks {
		p.addf(field, ErrShape, "want %d codebook rows, got %d", NumCodebooks, len(m))
		return nil, false
	}
	for c, row := range m {
		if len(row) != len(m[0]) {
			p.addf(fmt.Sprintf("%s[%d]", field, c), ErrShape, "want %d frames like row 0, got %d", len(m[0]), len(row))
			return nil, false
		}
	}
	return Codes(m), true
}

// frameMajor checks a [frames][10] matrix and transposes it.
func frameMajor(p *problems, field string, m [][]int) (Codes, bool) {
	for t, row := range m {
		if len(row) != NumCodebooks {
			p.addf(fmt.Sprintf("%s[%d]", field, t), ErrShape, "want %d codes in frame %d, got %d", NumCodebooks, t, len(row))
			return nil, false
		}
	}
	return transpose(m), true
}

// transpose turns frame-major rows into codebook-major Codes.
func transpose(m [][]int) Codes {
	flat := make([]int, len(m)*NumCodebooks)
	c := make(Codes, NumCodebooks)
	for cb := range c {
		c[cb] = flat[cb*len(m) : (cb+1)*len(m) : (cb+1)*len(m)]
		for t, row := range m {
			c[cb][t] = row[cb]
		}
	}
	return c
}

func formatList() string {
	s := make([]string, len(Formats))
	for i, f := range Formats {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// notAnObject says what the file is when it does not begin with a JSON
// object: empty, JSON of another type, or not JSON at all (an audio clip,
// say), with the offset of its first byte that is not white space.
func notAnObject(p *parser) error {
	p.ws()
	off := int64(p.pos)
	if p.pos >= len(p.data) {
		return &FieldError{Offset: off, Err: fmt.Errorf("%w: the file is empty: want a voice file's JSON object", ErrSyntax)}
	}
	c := p.data[p.pos]
	switch {
	case c == '{':
		return nil
	case c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9'):
		return &FieldError{Offset: off, Err: fmt.Errorf("%w: want a voice file's JSON object, got %s", ErrType, describe(c))}
	case bytes.HasPrefix(p.data[p.pos:], []byte("null")) || bytes.HasPrefix(p.data[p.pos:], []byte("true")) || bytes.HasPrefix(p.data[p.pos:], []byte("false")):
		return &FieldError{Offset: off, Err: fmt.Errorf("%w: want a voice file's JSON object, got %s", ErrType, describe(c))}
	}
	hint := "a voice file is a JSON object"
	switch {
	case bytes.HasPrefix(p.data, []byte("RIFF")) || bytes.HasPrefix(p.data, []byte("fLaC")) || bytes.HasPrefix(p.data, []byte("OggS")) || bytes.HasPrefix(p.data, []byte("ID3")):
		hint = "it looks like audio: drama voice prepare and drama encode take recordings"
	case bytes.HasPrefix(p.data, []byte("PK\x03\x04")):
		hint = "it looks like a zip archive"
	}
	return &FieldError{Offset: off, Err: fmt.Errorf("%w: the file is not JSON: it begins with byte %#02x (%q); %s", ErrSyntax, c, rune(c), hint)}
}
