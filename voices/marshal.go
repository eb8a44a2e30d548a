package voices

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Marshal checks v against its format's rules and returns its canonical
// bytes: UTF-8 without a byte order mark, keys in the documented order, two
// spaces of indent, one code row a line without spaces, integers only, LF
// line ends and one trailing newline. The same voice always gives the same
// bytes. opts may be nil. The error is a *ValidationError when v breaks a rule.
func Marshal(v *Voice, opts *Options) ([]byte, error) {
	if err := v.Validate(opts); err != nil {
		return nil, err
	}
	w := &writer{}
	w.buf.Grow(estimateSize(v))
	w.voice(v)
	out := w.buf.Bytes()
	if v.Format == FormatMetal && len(out) > MaxMetalFileSize {
		return nil, &FieldError{Offset: -1, Err: fmt.Errorf("%w: want at most %d bytes for %s, got %d: shorten the transcripts or use fewer frames", ErrTooLarge, MaxMetalFileSize, FormatMetal, len(out))}
	}
	return out, nil
}

func estimateSize(v *Voice) int {
	n := 1024
	for _, r := range v.References {
		n += len(r.Text) + 64 + r.Codes.Frames()*NumCodebooks*5 + r.Codes.Frames()*12
	}
	return n
}

type writer struct {
	buf  bytes.Buffer
	line []byte // one code row, reused
}

func (w *writer) voice(v *Voice) {
	w.buf.WriteString("{\n")
	w.field(1, "format", string(v.Format), true)
	w.field(1, "id", v.ID, true)
	w.field(1, "name", v.Name, true)
	switch v.Format {
	case FormatMetal:
		w.source(v.Source)
		w.field(1, "note", v.Note, true)
	case FormatCloned:
		w.field(1, "created", formatTime(v.Created), true)
		w.source(v.Source)
		w.consent(v.Consent)
	}
	w.buf.WriteString("  \"references\": [\n")
	for i := range v.References {
		w.reference(v.Format, &v.References[i], i == len(v.References)-1)
	}
	w.buf.WriteString("  ]\n}\n")
}

func (w *writer) indent(level int) {
	for range level {
		w.buf.WriteString("  ")
	}
}

func (w *writer) key(level int, k string) {
	w.indent(level)
	w.buf.WriteByte('"')
	w.buf.WriteString(k)
	w.buf.WriteString("\": ")
}

func (w *writer) end(comma bool) {
	if comma {
		w.buf.WriteByte(',')
	}
	w.buf.WriteByte('\n')
}

func (w *writer) field(level int, k, s string, comma bool) {
	w.key(level, k)
	writeString(&w.buf, s)
	w.end(comma)
}

func (w *writer) intField(level int, k string, n int, comma bool) {
	w.key(level, k)
	w.buf.WriteString(strconv.Itoa(n))
	w.end(comma)
}

func (w *writer) source(s SourceKind) {
	w.key(1, "source")
	w.buf.WriteString("{\"kind\": ")
	writeString(&w.buf, string(s))
	w.buf.WriteString("},\n")
}

func (w *writer) consent(c *Consent) {
	w.key(1, "consent")
	if c == nil {
		w.buf.WriteString("null,\n")
		return
	}
	w.buf.WriteString("{\n")
	w.field(2, "who", c.Who, true)
	w.field(2, "when", formatTime(c.When), true)
	w.field(2, "statement", c.Statement, false)
	w.buf.WriteString("  },\n")
}

func (w *writer) reference(f Format, r *Reference, last bool) {
	w.buf.WriteString("    {\n")
	w.field(3, "text", r.Text, true)
	if f == FormatCloned {
		w.intField(3, "samples", r.Samples, true)
	}
	w.intField(3, "frames", r.Codes.Frames(), true)
	switch f {
	case FormatCUDA:
		w.field(3, "codes_sha256", r.Codes.SHA256(), true)
		w.key(3, "vq_codes")
		w.matrix(r.Codes)
	case FormatMetal:
		w.key(3, "codes")
		w.matrix(r.Codes.FrameMajor())
	default:
		w.key(3, "codes")
		w.matrix(r.Codes)
	}
	w.buf.WriteString("    }")
	w.end(!last)
}

func (w *writer) matrix(m [][]int) {
	w.buf.WriteString("[\n")
	line := w.line
	for i, row := range m {
		line = append(line[:0], "        ["...)
		for j, x := range row {
			if j > 0 {
				line = append(line, ',')
			}
			line = appendCode(line, x)
		}
		line = append(line, ']')
		if i < len(m)-1 {
			line = append(line, ',')
		}
		line = append(line, '\n')
		w.buf.Write(line)
	}
	w.line = line
	w.buf.WriteString("      ]\n")
}

// appendCode appends x in decimal, with a fast path for codes (0..9999).
func appendCode(b []byte, x int) []byte {
	switch {
	case x < 0 || x > 9999:
		return strconv.AppendInt(b, int64(x), 10)
	case x < 10:
		return append(b, byte('0'+x))
	case x < 100:
		return append(b, byte('0'+x/10), byte('0'+x%10))
	case x < 1000:
		return append(b, byte('0'+x/100), byte('0'+x/10%10), byte('0'+x%10))
	}
	return append(b, byte('0'+x/1000), byte('0'+x/100%10), byte('0'+x/10%10), byte('0'+x%10))
}

// formatTime writes t in UTC as RFC 3339 with a trailing Z, with a fraction
// only when t has one.
func formatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

const hexDigits = "0123456789abcdef"

// writeString writes s as a JSON string the way encoding/json does with
// HTML escaping off: quote, backslash and control characters escaped, and
// U+2028 and U+2029 written as escapes. s must be valid UTF-8.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hexDigits[(r>>shift)&0xf])
			}
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// bufPool recycles IsCanonical's buffers.
var bufPool = sync.Pool{New: func() any { return new(writer) }}

// IsCanonical reports whether data is the canonical form of v, as Marshal
// would write it; v is typically what Parse read from data. It does not
// check v's rules (Parse did) and is false when v's codes are malformed.
func IsCanonical(data []byte, v *Voice) bool {
	for _, r := range v.References {
		if !wellShaped(r.Codes) {
			return false
		}
	}
	w := bufPool.Get().(*writer)
	defer bufPool.Put(w)
	w.buf.Reset()
	w.voice(v)
	return bytes.Equal(w.buf.Bytes(), data)
}

// wellShaped reports whether c has NumCodebooks rows of one length.
func wellShaped(c Codes) bool {
	if len(c) != NumCodebooks {
		return false
	}
	for _, row := range c {
		if len(row) != len(c[0]) {
			return false
		}
	}
	return true
}
