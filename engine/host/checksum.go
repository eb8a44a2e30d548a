package host

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		sum, name, err := splitSumLine(line)
		if err != nil {
			return nil, &ChecksumError{Binary: binary, Status: ChecksumMalformed, Line: n, Err: err}
		}
		if filepath.Base(name) == base {
			return sum, nil
		}
	}
	return nil, &ChecksumError{Binary: binary, Status: ChecksumMalformed, Line: n,
		Err: fmt.Errorf("no line names %s", base)}
}

// splitSumLine splits one sha256sum line into its digest and file name.
func splitSumLine(line string) ([]byte, string, error) {
	hexSum, rest, ok := strings.Cut(line, " ")
	if !ok || len(hexSum) != 64 {
		return nil, "", fmt.Errorf("want \"<64 hex digits>  <file>\", got %q", trunc(line))
	}
	sum, err := hex.DecodeString(hexSum)
	if err != nil {
		return nil, "", fmt.Errorf("digest: want 64 hex digits, got %q", hexSum)
	}
	name := strings.TrimPrefix(strings.TrimPrefix(rest, " "), "*")
	if name == "" {
		return nil, "", fmt.Errorf("want a file name after the digest, got %q", trunc(line))
	}
	return sum, name, nil
}

func trunc(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// FileSHA256 returns the sha256 of the file at path.
func FileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// Verify checks binary against its checksum file and returns the digest.
// A refusal is a *ChecksumError.
func Verify(binary string) ([]byte, error) {
	want, err := ReadChecksum(binary)
	if err != nil {
		return nil, err
	}
	got, err := FileSHA256(binary)
	if err != nil {
		return nil, &ChecksumError{Binary: binary, Status: ChecksumUnreadable, Err: err}
	}
	if !bytes.Equal(want, got) {
		return nil, &ChecksumError{Binary: binary, Status: ChecksumMismatch,
			Want: hex.EncodeToString(want), Got: hex.EncodeToString(got), Err: ErrChecksumMismatch}
	}
	return got, nil
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
