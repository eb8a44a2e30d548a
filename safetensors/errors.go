package safetensors

import (
	"errors"
	"fmt"
)

// ErrFormat matches every error about a malformed file or index.
var ErrFormat = errors.New("safetensors: invalid format")

// ErrNotFound matches a lookup of a tensor that a file or checkpoint lacks.
var ErrNotFound = errors.New("safetensors: tensor not found")

// MaxHeaderSize is the largest JSON header the Reader accepts (100 MB).
const MaxHeaderSize = 100_000_000

// FormatError describes a malformed file: where (the file, a tensor name or
// a byte offset, whichever is known) and what.
type FormatError struct {
	File   string // file name, when known
	Tensor string // tensor name, when the problem is one tensor's
	Offset int64  // byte offset in the file, or -1
	Msg    string
}

// Error formats the error as "safetensors: file: tensor \"x\": offset N: message".
func (e *FormatError) Error() string {
	s := "safetensors: "
	if e.File != "" {
		s += e.File + ": "
	}
	if e.Tensor != "" {
		s += fmt.Sprintf("tensor %q: ", e.Tensor)
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf("offset %d: ", e.Offset)
	}
	return s + e.Msg
}

// Is makes errors.Is(err, ErrFormat) true for every FormatError.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

func formatErr(tensor string, off int64, format string, args ...any) *FormatError {
	return &FormatError{Tensor: tensor, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// withFile sets the file name on a *FormatError (or wraps any other error).
func withFile(err error, name string) error {
	var fe *FormatError
	if errors.As(err, &fe) && fe.File == "" {
		fe.File = name
		return err
	}
	return fmt.Errorf("safetensors: %s: %w", name, err)
}
