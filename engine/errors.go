package engine

import (
	"errors"
	"fmt"
	"net/http"
)

// Kind classifies an engine error by what the caller should do about it.
type Kind int

// Error kinds.
const (
	KindFailed   Kind = iota // the engine failed: a crash, a bad reply, an internal error (HTTP 500)
	KindInvalid              // the request is wrong; retrying it will not help (HTTP 400)
	KindBusy                 // the engine is busy with another synthesis (HTTP 503)
	KindNotReady             // the engine is not started, loading or restarting (HTTP 503)
)

var kindNames = [...]string{"engine failed", "invalid input", "busy", "not ready"}

// String names the kind.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "engine failed"
	}
	return kindNames[k]
}

// HTTPStatus is the status an HTTP layer answers with for this kind.
func (k Kind) HTTPStatus() int {
	switch k {
	case KindInvalid:
		return http.StatusBadRequest
	case KindBusy, KindNotReady:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Sentinels for errors.Is: an *Error matches the sentinel of its kind.
var (
	ErrFailed   = &Error{Kind: KindFailed, Msg: "engine failed"}
	ErrInvalid  = &Error{Kind: KindInvalid, Msg: "invalid input"}
	ErrBusy     = &Error{Kind: KindBusy, Msg: "busy"}
	ErrNotReady = &Error{Kind: KindNotReady, Msg: "not ready"}
)

// Error is an engine error with its kind. Msg is meant for the user: for
// KindInvalid it is the engine's own words about the request.
type Error struct {
	Kind    Kind
	Op      string // the method, e.g. "synthesize"; may be empty
	Msg     string
	LogTail string // the end of the native engine's output, when it failed
	Err     error  // the cause, if any
}

// Error returns "engine: OP: MSG", or the cause's text in place of an empty
// MSG.
func (e *Error) Error() string {
	s := "engine: "
	if e.Op != "" {
		s += e.Op + ": "
	}
	switch {
	case e.Msg != "":
		s += e.Msg
	case e.Err != nil:
		s += e.Err.Error()
	default:
		s += e.Kind.String()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's kind.
func (e *Error) Is(target error) bool {
	for _, s := range []*Error{ErrFailed, ErrInvalid, ErrBusy, ErrNotReady} {
		if target == s {
			return e.Kind == s.Kind
		}
	}
	return false
}

// Errorf returns an *Error of kind k with a formatted message. A %w verb
// wraps its operand as the cause.
func Errorf(k Kind, format string, args ...any) error {
	wrapped := fmt.Errorf(format, args...)
	return &Error{Kind: k, Msg: wrapped.Error(), Err: errors.Unwrap(wrapped)}
}

// Invalidf returns a KindInvalid error with a formatted message.
func Invalidf(format string, args ...any) error { return Errorf(KindInvalid, format, args...) }

// NotReadyf returns a KindNotReady error with a formatted message.
func NotReadyf(format string, args ...any) error { return Errorf(KindNotReady, format, args...) }

// KindOf returns the kind of the first *Error in err's chain, KindFailed
// when there is none, and ok=false for a nil err.
func KindOf(err error) (k Kind, ok bool) {
	if err == nil {
		return KindFailed, false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, true
	}
	return KindFailed, true
}
