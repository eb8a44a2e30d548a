package native

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/drama-tts/drama/internal/filehash"
)

// ErrChecksum is wrapped by a ChecksumError.
var ErrChecksum = errors.New("native: engine binary checksum mismatch")

// ChecksumError is an engine binary whose sha256 is not the recorded one.
type ChecksumError struct {
	Path, Want, Got string
}

// Error implements error.
func (e *ChecksumError) Error() string {
	return fmt.Sprintf("native: engine binary %s: sha256: want %s, got %s; reinstall the engine, or allow the mismatch explicitly",
		e.Path, e.Want, e.Got)
}

// Unwrap returns ErrChecksum.
func (e *ChecksumError) Unwrap() error { return ErrChecksum }

// CheckBinary compares the file's sha256 with want (hex, any case).
func CheckBinary(path, want string) error {
	got, _, err := filehash.SHA256(context.Background(), path, nil)
	if err != nil {
		return fmt.Errorf("native: engine binary: %w", err)
	}
	if !strings.EqualFold(got, strings.TrimSpace(want)) {
		return &ChecksumError{Path: path, Want: strings.ToLower(strings.TrimSpace(want)), Got: got}
	}
	return nil
}
