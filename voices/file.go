package voices

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// ReadFile reads and checks the voice file at name, like Parse; errors name
// the file. A file larger than MaxFileSize is refused before it is read.
func ReadFile(name string, opts *Options) (*Voice, error) {
	data, err := ReadBytes(name)
	if err != nil {
		return nil, err
	}
	return parseNamed(name, data, opts)
}

// ReadBytes reads the voice file at name without checking it, for callers
// that also need its bytes (its sha256, its canonical form). A file larger
// than MaxFileSize is refused with ErrTooLarge without being read whole.
func ReadBytes(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("voices: %w", err)
	}
	defer f.Close()
	size := int64(512)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = min(st.Size(), MaxFileSize) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, fmt.Errorf("voices: %w", err) // an *fs.PathError: it names the file
	}
	if buf.Len() > MaxFileSize {
		return nil, &FieldError{File: name, Offset: -1, Err: fmt.Errorf("%w: want at most %d bytes, got more", ErrTooLarge, MaxFileSize)}
	}
	return buf.Bytes(), nil
}

// FileSHA256 returns the hex sha256 of data, the digest a voice file is
// pinned by.
func FileSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
