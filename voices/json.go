package voices

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// parser is a strict, single-pass JSON reader driven by the voice schema.
// Keys match exactly (no case folding), duplicates are refused, strings must
// be valid UTF-8, numbers read as integers must be integers, and every error
// carries the byte offset where it was found.
type parser struct {
	data  []byte
	pos   int
	depth int
}

// maxDepth bounds the nesting of skipped values.
const maxDepth = 64

// maxKeys bounds the keys of an object kept for checking; a voice object has
// at most seven, so any beyond are unknown fields and already reported.
const maxKeys = 64

func (p *parser) fail(field string, sentinel error, format string, args ...any) error {
	return &FieldError{Offset: int64(p.pos), Field: field, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.pos >= len(p.data) {
		return 0
	}
	return p.data[p.pos]
}

func (p *parser) expect(field string, c byte, what string) error {
	if got := p.peek(); got != c {
		return p.fail(field, ErrType, "want %s, got %s", what, describe(got))
	}
	p.pos++
	return nil
}

func describe(c byte) string {
	switch {
	case c == 0:
		return "end of file"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return fmt.Sprintf("%q", c)
	}
}

// keyAt is a key seen in an object and the offset of its name.
type keyAt struct {
	name string
	off  int64
}

// object reads an object, calling fn for each key with the parser placed at
// the value; fn must consume the value. It returns the keys in order.
func (p *parser) object(field string, fn func(key string, off int64) error) ([]keyAt, error) {
	if err := p.expect(field, '{', "an object"); err != nil {
		return nil, err
	}
	var keys []keyAt
	seen := map[string]bool{}
	if p.peek() == '}' {
		p.pos++
		return keys, nil
	}
	for {
		p.ws()
		off := int64(p.pos)
		if p.peek() != '"' {
			return keys, p.fail(field, ErrSyntax, "want a field name, got %s", describe(p.peek()))
		}
		key, err := p.key(field, seen)
		if err != nil {
			return keys, err
		}
		if len(keys) < maxKeys {
			keys = append(keys, keyAt{key, off})
		}
		if err := fn(key, off); err != nil {
			return keys, err
		}
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return keys, nil
		default:
			return keys, p.fail(field, ErrSyntax, "want ',' or '}', got %s", describe(p.peek()))
		}
	}
}

// key reads a field name not in seen, and the colon after it.
func (p *parser) key(field string, seen map[string]bool) (string, error) {
	p.ws()
	off := int64(p.pos)
	key, err := p.str(field)
	if err != nil {
		return "", err
	}
	if seen[key] {
		return "", &FieldError{Offset: off, Field: join(field, key), Err: fmt.Errorf("%w: %q appears twice", ErrDuplicate, key)}
	}
	seen[key] = true
	return key, p.expect(join(field, key), ':', "':'")
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// array reads an array, calling fn for each element.
func (p *parser) array(field string, fn func(i int) error) error {
	if err := p.expect(field, '[', "an array"); err != nil {
		return err
	}
	if p.peek() == ']' {
		p.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := fn(i); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return nil
		default:
			return p.fail(field, ErrSyntax, "want ',' or ']', got %s", describe(p.peek()))
		}
	}
}

// str reads a string.
func (p *parser) str(field string) (string, error) {
	if err := p.expect(field, '"', "a string"); err != nil {
		return "", err
	}
	start, escaped := p.pos-1, false
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return p.decodeString(field, start, escaped)
		case c == '\\':
			escaped = true
			p.pos += 2
		case c < 0x20:
			return "", p.fail(field, ErrSyntax, "control character %#02x in a string (escape it)", c)
		default:
			p.pos++
		}
	}
	p.pos = len(p.data)
	return "", p.fail(field, ErrSyntax, "unterminated string")
}

func (p *parser) decodeString(field string, start int, escaped bool) (string, error) {
	raw := p.data[start:p.pos]
	if !utf8.Valid(raw) {
		return "", &FieldError{Offset: int64(start), Field: field, Err: fmt.Errorf("%w: string is not valid UTF-8", ErrText)}
	}
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", &FieldError{Offset: int64(start), Field: field, Err: fmt.Errorf("%w: bad escape in string", ErrSyntax)}
	}
	return s, nil
}

// maxIntDigits bounds the digits of an integer; larger values are refused.
const maxIntDigits = 15

// integer reads an integer (no fraction, no exponent).
func (p *parser) integer(field string) (int, error) {
	p.ws()
	start, neg := p.pos, false
	if p.pos < len(p.data) && p.data[p.pos] == '-' {
		neg = true
		p.pos++
	}
	n, digits := 0, 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		n = n*10 + int(p.data[p.pos]-'0')
		p.pos++
		digits++
	}
	if err := p.checkInt(field, start, digits); err != nil {
		return 0, err
	}
	if neg {
		n = -n
	}
	return n, nil
}

func (p *parser) checkInt(field string, start, digits int) error {
	switch {
	case digits == 0:
		p.pos = start
		return p.fail(field, ErrType, "want an integer, got %s", describe(p.peek()))
	case digits > maxIntDigits:
		p.pos = start
		return p.fail(field, ErrLimit, "integer has more than %d digits", maxIntDigits)
	case digits > 1 && p.data[p.pos-digits] == '0':
		p.pos = start
		return p.fail(field, ErrSyntax, "integer with a leading zero")
	}
	if p.pos < len(p.data) {
		if c := p.data[p.pos]; c == '.' || c == 'e' || c == 'E' {
			p.pos = start
			return p.fail(field, ErrType, "want an integer, got a number with a fraction or exponent")
		}
	}
	return nil
}

// null consumes a null literal if one comes next.
func (p *parser) null() bool {
	if p.peek() == 'n' && p.pos+4 <= len(p.data) && string(p.data[p.pos:p.pos+4]) == "null" {
		p.pos += 4
		return true
	}
	return false
}

// intMatrix reads an array of arrays of integers, at most maxRows rows of at
// most maxCols each. It is the hot path for codes.
func (p *parser) intMatrix(field string, maxRows, maxCols int) ([][]int, error) {
	var rows [][]int
	hint := 0
	err := p.array(field, func(i int) error {
		if i >= maxRows {
			return p.fail(field, ErrLimit, "more than %d rows", maxRows)
		}
		row, err := p.intRow(maxCols, hint)
		hint = len(row)
		rows = append(rows, row)
		if fe, ok := err.(*FieldError); ok {
			fe.Field = fmt.Sprintf("%s[%d]", field, i) // named only on error: this loop is hot
		}
		return err
	})
	return rows, err
}

// intRow reads one row; its errors have no field name yet. It is the
// innermost loop of reading codes, so it reads the array itself.
func (p *parser) intRow(maxCols, hint int) ([]int, error) {
	if err := p.expect("", '[', "an array"); err != nil {
		return nil, err
	}
	row := make([]int, 0, hint)
	if p.peek() == ']' {
		p.pos++
		return row, nil
	}
	for {
		if len(row) == maxCols {
			return row, p.fail("", ErrLimit, "more than %d values", maxCols)
		}
		n, err := p.integer("")
		if err != nil {
			return row, err
		}
		row = append(row, n)
		switch c := p.peek(); c {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return row, nil
		default:
			return row, p.fail("", ErrSyntax, "want ',' or ']', got %s", describe(c))
		}
	}
}

// skip consumes any value.
func (p *parser) skip(field string) error {
	if p.depth++; p.depth > maxDepth {
		return p.fail(field, ErrLimit, "nested deeper than %d", maxDepth)
	}
	defer func() { p.depth-- }()
	switch c := p.peek(); {
	case c == '{':
		_, err := p.object(field, func(string, int64) error { return p.skip(field) })
		return err
	case c == '[':
		return p.array(field, func(int) error { return p.skip(field) })
	case c == '"':
		_, err := p.str(field)
		return err
	case c == 't' || c == 'f' || c == 'n':
		return p.literal(field)
	default:
		return p.number(field)
	}
}

func (p *parser) literal(field string) error {
	for _, lit := range []string{"true", "false", "null"} {
		if p.pos+len(lit) <= len(p.data) && string(p.data[p.pos:p.pos+len(lit)]) == lit {
			p.pos += len(lit)
			return nil
		}
	}
	return p.fail(field, ErrSyntax, "invalid literal")
}

// number consumes any JSON number.
func (p *parser) number(field string) error {
	start := p.pos
	for p.pos < len(p.data) && isNumberByte(p.data[p.pos]) {
		p.pos++
	}
	if !json.Valid(p.data[start:p.pos]) {
		p.pos = start
		return p.fail(field, ErrSyntax, "invalid value")
	}
	return nil
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
