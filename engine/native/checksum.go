package native

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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

// FileSHA256 returns the hex sha256 of a file.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("native: engine binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("native: engine binary %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CheckBinary compares the file's sha256 with want (hex, any case).
func CheckBinary(path, want string) error {
	got, err := FileSHA256(path)
	if err != nil {
		return err
	}
	if !strings.EqualFold(got, strings.TrimSpace(want)) {
		return &ChecksumError{Path: path, Want: strings.ToLower(strings.TrimSpace(want)), Got: got}
	}
	return nil
}
