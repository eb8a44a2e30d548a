package host

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/internal/filehash"
)

// ChecksumSuffix is appended to a plugin binary's path to name its checksum
// file.
const ChecksumSuffix = ".sha256"

// ChecksumStatus is the outcome of checking a plugin binary.
type ChecksumStatus int

// Checksum outcomes.
const (
	ChecksumOK         ChecksumStatus = iota
	ChecksumMissing                   // no checksum file beside the binary
	ChecksumMalformed                 // the file is not in sha256sum's format or names another file
	ChecksumMismatch                  // the binary's sha256 differs
	ChecksumUnreadable                // the binary or the file could not be read
)

var statusNames = [...]string{"ok", "missing", "malformed", "mismatch", "unreadable"}

// String names the status.
func (s ChecksumStatus) String() string {
	if s < 0 || int(s) >= len(statusNames) {
		return "unknown"
	}
	return statusNames[s]
}

// Sentinels for errors.Is on a *ChecksumError.
var (
	ErrChecksumMissing   = errors.New("checksum file missing")
	ErrChecksumMalformed = errors.New("checksum file malformed")
	ErrChecksumMismatch  = errors.New("checksum mismatch")
)

// ChecksumError says why a plugin binary is refused.
type ChecksumError struct {
	Binary string
	Status ChecksumStatus
	Want   string // hex, when known
	Got    string // hex, when known
	Line   int    // the offending line of the checksum file, when malformed
	Err    error
}

// Error says what is wrong and what to do.
func (e *ChecksumError) Error() string {
	file := e.Binary + ChecksumSuffix
	base := filepath.Base(e.Binary)
	switch e.Status {
	case ChecksumMissing:
		return fmt.Sprintf("host: plugin %s refused: no checksum file %s; if you trust the binary, run `sha256sum %s > %s.sha256` in its directory (make build writes it)", e.Binary, file, base, base)
	case ChecksumMalformed:
		return fmt.Sprintf("host: plugin %s refused: checksum file %s line %d: %v; rewrite it with `sha256sum %s > %s.sha256`", e.Binary, file, e.Line, e.Err, base, base)
	case ChecksumMismatch:
		return fmt.Sprintf("host: plugin %s refused: sha256 mismatch: want %s (from %s), got %s; the binary changed since its checksum was written: rebuild it with `make build` or reinstall it", e.Binary, e.Want, file, e.Got)
	}
	return fmt.Sprintf("host: plugin %s: checksum: %v", e.Binary, e.Err)
}

// Unwrap returns the cause.
func (e *ChecksumError) Unwrap() error { return e.Err }

// Is matches the sentinel of e's status.
func (e *ChecksumError) Is(target error) bool {
	switch target {
	case ErrChecksumMissing:
		return e.Status == ChecksumMissing
	case ErrChecksumMalformed:
		return e.Status == ChecksumMalformed
	case ErrChecksumMismatch:
		return e.Status == ChecksumMismatch
	}
	return false
}

// ReadChecksum reads the sha256 recorded for binary in binary+".sha256": a
// line "<64 hex>  <name>" (or "<64 hex> *<name>") naming the binary's file.
func ReadChecksum(binary string) ([]byte, error) {
	b, err := os.ReadFile(binary + ChecksumSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &ChecksumError{Binary: binary, Status: ChecksumMissing, Err: ErrChecksumMissing}
	}
	if err != nil {
		return nil, &ChecksumError{Binary: binary, Status: ChecksumUnreadable, Err: err}
	}
	return parseChecksum(binary, b)
}

// parseChecksum finds the line naming binary's base name.
func parseChecksum(binary string, data []byte) ([]byte, error) {
	base := filepath.Base(binary)
	sums, err := filehash.ParseSums(binary+ChecksumSuffix, data)
	var le *filehash.LineError
	if errors.As(err, &le) {
		return nil, &ChecksumError{Binary: binary, Status: ChecksumMalformed, Line: le.Line, Err: le.Err}
	}
	if err != nil {
		return nil, &ChecksumError{Binary: binary, Status: ChecksumUnreadable, Err: err}
	}
	last := 0
	for _, s := range sums {
		if filepath.Base(s.Name) == base {
			return hex.DecodeString(s.SHA256)
		}
		last = s.Line
	}
	return nil, &ChecksumError{Binary: binary, Status: ChecksumMalformed, Line: last,
		Err: fmt.Errorf("no line names %s", base)}
}

// Verify checks binary against its checksum file and returns the digest.
// A refusal is a *ChecksumError.
func Verify(binary string) ([]byte, error) {
	want, err := ReadChecksum(binary)
	if err != nil {
		return nil, err
	}
	got, _, err := filehash.SHA256(context.Background(), binary, nil)
	if err != nil {
		return nil, &ChecksumError{Binary: binary, Status: ChecksumUnreadable, Err: err}
	}
	if hex.EncodeToString(want) != got {
		return nil, &ChecksumError{Binary: binary, Status: ChecksumMismatch,
			Want: hex.EncodeToString(want), Got: got, Err: ErrChecksumMismatch}
	}
	return want, nil
}

// StatusOf returns the status of a Verify error (ChecksumOK for nil).
func StatusOf(err error) ChecksumStatus {
	var ce *ChecksumError
	if err == nil {
		return ChecksumOK
	}
	if errors.As(err, &ce) {
		return ce.Status
	}
	return ChecksumUnreadable
}
