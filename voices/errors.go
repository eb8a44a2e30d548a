package voices

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Errors from this package wrap one of them, mostly inside a
// *FieldError naming the file, the reference and the field.
var (
	ErrSyntax        = errors.New("voices: invalid JSON")
	ErrType          = errors.New("voices: wrong JSON type")
	ErrUnknownFormat = errors.New("voices: unknown format")
	ErrUnknownField  = errors.New("voices: unknown field")
	ErrMissingField  = errors.New("voices: missing field")
	ErrDuplicate     = errors.New("voices: duplicate field")
	ErrLimit         = errors.New("voices: limit exceeded")
	ErrShape         = errors.New("voices: codes have the wrong shape")
	ErrFrames        = errors.New("voices: frame count mismatch")
	ErrCodeRange     = errors.New("voices: code out of range")
	ErrChecksum      = errors.New("voices: codes_sha256 mismatch")
	ErrTranscript    = errors.New("voices: transcript not allowed")
	ErrText          = errors.New("voices: text not allowed")
	ErrID            = errors.New("voices: invalid id")
	ErrConsent       = errors.New("voices: consent rule broken")
	ErrTooLarge      = errors.New("voices: file too large")
	ErrSource        = errors.New("voices: source attestation")
	ErrNoFit         = errors.New("voices: references do not fit")
	ErrNPY           = errors.New("voices: invalid .npy file")
)

// FieldError is a problem with one field of a voice file.
type FieldError struct {
	File   string // the file name, if known
	Offset int64  // byte offset in the file, -1 if not known
	Field  string // JSON path such as "references[2].codes_sha256"; empty for the whole file
	Err    error  // wraps one of the sentinel errors
}

// Error formats the problem as "voices: FILE: FIELD: offset N: message",
// leaving out the parts not known.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("voices: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Offset >= 0 {
		b.WriteString("offset ")
		b.WriteString(strconv.FormatInt(e.Offset, 10))
		b.WriteString(": ")
	}
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "voices: "))
	return b.String()
}

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// Reference returns the index of the reference the field belongs to, or -1.
func (e *FieldError) Reference() int {
	rest, ok := strings.CutPrefix(e.Field, "references[")
	if !ok {
		return -1
	}
	i, _, ok := strings.Cut(rest, "]")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(i)
	if err != nil {
		return -1
	}
	return n
}

// ValidationError lists every problem found in one voice.
type ValidationError struct {
	File     string
	Problems []*FieldError
}

// Error gives the one problem, or the count and each problem on its own line.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	var b strings.Builder
	name := e.File
	if name == "" {
		name = "voice"
	}
	fmt.Fprintf(&b, "voices: %s: %d problems", name, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems, so errors.Is and errors.As see each of them.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// problems collects field errors while a voice is checked.
type problems struct {
	list []*FieldError
}

// maxProblems bounds the problems listed for one voice.
const maxProblems = 100

func (p *problems) add(field string, offset int64, err error) {
	if len(p.list) < maxProblems {
		p.list = append(p.list, &FieldError{Offset: offset, Field: field, Err: err})
	}
}

func (p *problems) addf(field string, sentinel error, format string, args ...any) {
	p.add(field, -1, fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...))
}

// err returns the collected problems as a *ValidationError naming file, or nil.
func (p *problems) err(file string) error {
	if len(p.list) == 0 {
		return nil
	}
	for _, fe := range p.list {
		fe.File = file
	}
	return &ValidationError{File: file, Problems: p.list}
}

func refField(i int, name string) string {
	if name == "" {
		return "references[" + strconv.Itoa(i) + "]"
	}
	return "references[" + strconv.Itoa(i) + "]." + name
}
