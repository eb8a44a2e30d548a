package atomicfile

import (
	"errors"
	"fmt"
)

// ErrNoSpace reports a file system with less free space than a write needs.
var ErrNoSpace = errors.New("not enough disk space")

// SpaceError is a write refused before its first byte: the file system
// holding Dir has Free bytes available to this user (FreeBytes) and the
// write needs Need. It matches ErrNoSpace with errors.Is.
type SpaceError struct {
	Dir        string
	Need, Free int64
}

// Error returns "not enough disk space on DIR: want NEED bytes free, got FREE".
func (e *SpaceError) Error() string {
	return fmt.Sprintf("%v on %s: want %d bytes free, got %d", ErrNoSpace, e.Dir, e.Need, e.Free)
}

// Unwrap gives ErrNoSpace.
func (e *SpaceError) Unwrap() error { return ErrNoSpace }
