package cmdutil

import (
	"context"
	"errors"
	"fmt"
)

// The exit codes of every drama command. This table is the only place they
// are defined; ExitCode maps an error onto it.
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // any other error
	ExitUsage       = 2   // bad flags or arguments
	ExitMismatch    = 3   // verification found a mismatch or an invalid file
	ExitEngine      = 4   // the engine failed or could not start
	ExitInterrupted = 130 // interrupted (SIGINT or SIGTERM); cleanup ran first
)

// ExitStatusHelp is the EXIT STATUS section shown in help.
const ExitStatusHelp = `EXIT STATUS
  0    success
  1    error
  2    usage error (bad flags or arguments)
  3    verification mismatch or invalid input file
  4    engine failure
  130  interrupted (SIGINT or SIGTERM), after cleanup`

// FlagError is a usage error: bad flags or arguments. It exits with 2.
type FlagError struct{ err error }

// Error returns the message of the usage error.
func (e *FlagError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *FlagError) Unwrap() error { return e.err }

// FlagErrorf returns a usage error (exit 2) with a formatted message.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{err: fmt.Errorf(format, args...)}
}

// ExitError carries an exit code with its cause. A nil Err means the
// message was already printed.
type ExitError struct {
	Code int
	Err  error
}

// Error returns the cause's message, or "exit status N" when the message
// was already printed.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *ExitError) Unwrap() error { return e.Err }

// MismatchError marks err as a verification mismatch (exit 3).
func MismatchError(err error) error { return &ExitError{Code: ExitMismatch, Err: err} }

// EngineError marks err as an engine failure (exit 4).
func EngineError(err error) error { return &ExitError{Code: ExitEngine, Err: err} }

// SilentError exits with code without printing anything more: the command
// has already reported what went wrong.
func SilentError(code int) error { return &ExitError{Code: code} }

// ExitCode maps an error to the exit-code table.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var fe *FlagError
	if errors.As(err, &fe) {
		return ExitUsage
	}
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	return ExitFailure
}

// IsSilent reports whether err asks for no message.
func IsSilent(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Err == nil
}

// InterruptedError is an interruption (exit 130) with what the user can do
// next, e.g. the command line that resumes. It matches context.Canceled.
type InterruptedError struct {
	Next string
}

// Error returns "interrupted: NEXT".
func (e *InterruptedError) Error() string {
	if e.Next == "" {
		return "interrupted"
	}
	return "interrupted: " + e.Next
}

// Is reports whether target is context.Canceled.
func (e *InterruptedError) Is(target error) bool { return target == context.Canceled }

// Interrupted returns an InterruptedError saying what to do next.
func Interrupted(next string) error { return &InterruptedError{Next: next} }
