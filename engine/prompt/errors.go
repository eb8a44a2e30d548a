package prompt

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsupported marks a tokenizer.json that is well formed but uses a
	// model, normalizer or pre-tokenizer this package does not implement.
	ErrUnsupported = errors.New("not supported")
	// ErrSemantic marks a tokenizer without the 4096 semantic tokens
	// <|semantic:0|> to <|semantic:4095|> at contiguous ids.
	ErrSemantic = errors.New("semantic tokens missing or not contiguous")
	// ErrTooLong marks a prompt longer than the model takes.
	ErrTooLong = errors.New("prompt too long")
	// ErrStructuralToken marks text that holds one of the tokenizer's added
	// tokens (such as <|im_start|>) or a "<|" / "|>" marker where plain text
	// is required.
	ErrStructuralToken = errors.New("structural token in text")
	// ErrInvalidUTF8 marks text that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("text is not valid UTF-8")
)

// FormatError reports a tokenizer.json (or model config.json) that cannot be
// used: the file, the field and why.
type FormatError struct {
	File  string // file name as given, or "tokenizer.json" for a reader
	Field string // JSON path of the field, such as "model.merges[12]"
	Err   error
}

// Error describes the file, the field and the fault.
func (e *FormatError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("prompt: %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("prompt: %s: %s: %v", e.File, e.Field, e.Err)
}

// Unwrap returns the fault.
func (e *FormatError) Unwrap() error { return e.Err }

// TextError reports text that cannot be tokenized or used where it is: what
// (such as "reference 2 text"), the byte offset, and why.
type TextError struct {
	What   string
	Offset int
	Err    error
}

// Error describes the text, the offset and the fault.
func (e *TextError) Error() string {
	return fmt.Sprintf("prompt: %s: byte %d: %v", e.What, e.Offset, e.Err)
}

// Unwrap returns the fault.
func (e *TextError) Unwrap() error { return e.Err }

// TooLongError reports a prompt with more tokens than the model takes.
type TooLongError struct {
	Tokens int // tokens in the prompt
	Max    int // most tokens the model takes in a prompt
}

// Error gives both counts and what to do.
func (e *TooLongError) Error() string {
	return fmt.Sprintf("prompt: prompt too long: want at most %d tokens, got %d: shorten the text or use fewer or shorter references", e.Max, e.Tokens)
}

// Unwrap returns ErrTooLong.
func (e *TooLongError) Unwrap() error { return ErrTooLong }
