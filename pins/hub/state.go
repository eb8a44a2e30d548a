package hub

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"os"

	"github.com/drama-tts/drama/pins"
)

// stateVersion is the version of the resume sidecar's format.
const stateVersion = 1

// partState is the resume sidecar kept beside a partial blob: which chunks
// are on disk and the hash state of the contiguous prefix already hashed,
// so a resumed download neither fetches nor re-reads those bytes.
type partState struct {
	Version int    `json:"version"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Chunk   int64  `json:"chunk"`
	Done    []byte `json:"done"`   // bitmap of finished chunks, LSB first
	Hashed  int64  `json:"hashed"` // bytes of the prefix fed to the hashes
	SHA256  []byte `json:"sha256_state,omitempty"`
	GitSHA1 []byte `json:"git_sha1_state,omitempty"`
}

func numChunks(size, chunk int64) int { return int((size + chunk - 1) / chunk) }

// parseState decodes and checks a sidecar for a file of the given path and
// size; any disagreement is an error and the download starts over.
func parseState(data []byte, path string, size int64) (*partState, error) {
	var st partState
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("resume state: %w", err)
	}
	switch {
	case st.Version != stateVersion:
		return nil, fmt.Errorf("resume state: version: want %d, got %d", stateVersion, st.Version)
	case st.Path != path || st.Size != size:
		return nil, fmt.Errorf("resume state: want %s (%d bytes), got %s (%d bytes)", path, size, st.Path, st.Size)
	case st.Chunk <= 0 || st.Chunk > 1<<34:
		return nil, fmt.Errorf("resume state: chunk size %d out of range", st.Chunk)
	case len(st.Done) != (numChunks(size, st.Chunk)+7)/8:
		return nil, fmt.Errorf("resume state: done bitmap: want %d bytes, got %d", (numChunks(size, st.Chunk)+7)/8, len(st.Done))
	case st.Hashed < 0 || st.Hashed > size || (st.Hashed != size && st.Hashed%st.Chunk != 0):
		return nil, fmt.Errorf("resume state: hashed offset %d is not a chunk boundary of %d bytes", st.Hashed, size)
	}
	for i := 0; i < numChunks(st.Hashed, st.Chunk); i++ {
		if !bit(st.Done, i) {
			return nil, fmt.Errorf("resume state: chunk %d hashed but not done", i)
		}
	}
	return &st, nil
}

func bit(b []byte, i int) bool { return b[i/8]&(1<<(i%8)) != 0 }
func setBit(b []byte, i int)   { b[i/8] |= 1 << (i % 8) }

func loadState(name, path string, size int64) *partState {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	st, err := parseState(data, path, size)
	if err != nil {
		return nil
	}
	return st
}

// stateFile is an open resume sidecar, rewritten in place by one write
// of at least the size it already has (JSON padded with spaces, which a
// decoder skips) and never truncated. So a rewrite needs no new disk
// space, and a full disk cannot stop the sidecar from following the
// download; a process killed between two writes leaves one or the other
// whole. It is not synced: a power loss is caught by the final digest
// check.
type stateFile struct {
	f    *os.File
	size int64
}

// stateBlock is the size a sidecar is padded to at least: one block.
const stateBlock = 4096

func openStateFile(name string) (*stateFile, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &stateFile{f: f, size: fi.Size()}, nil
}

// save writes st over the sidecar.
func (sf *stateFile) save(st *partState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	n := max(sf.size, (int64(len(data))+stateBlock)/stateBlock*stateBlock)
	buf := bytes.Repeat([]byte{' '}, int(n))
	copy(buf, data)
	buf[n-1] = '\n'
	if _, err := writeAt(sf.f, buf, 0); err != nil {
		return err
	}
	sf.size = n
	return nil
}

func (sf *stateFile) close() {
	if sf != nil {
		sf.f.Close()
	}
}

// digester hashes a file's prefix: always sha256, and the git blob sha1
// when the pin names a small file by it.
type digester struct {
	sha256, gitSHA1 hash.Hash
}

func newDigester(f pins.File) *digester {
	d := &digester{sha256: sha256.New()}
	if f.GitSHA1 != "" && !f.LFS {
		d.gitSHA1 = sha1.New()
		fmt.Fprintf(d.gitSHA1, "blob %d\x00", f.Size)
	}
	return d
}

// Write feeds p to every hash.
func (d *digester) Write(p []byte) (int, error) {
	d.sha256.Write(p)
	if d.gitSHA1 != nil {
		d.gitSHA1.Write(p)
	}
	return len(p), nil
}

// marshal returns the hash states for the sidecar.
func (d *digester) marshal() (s256, s1 []byte) {
	s256, _ = d.sha256.(encoding.BinaryMarshaler).MarshalBinary()
	if d.gitSHA1 != nil {
		s1, _ = d.gitSHA1.(encoding.BinaryMarshaler).MarshalBinary()
	}
	return s256, s1
}

// unmarshal restores states saved by marshal.
func (d *digester) unmarshal(s256, s1 []byte) error {
	if err := d.sha256.(encoding.BinaryUnmarshaler).UnmarshalBinary(s256); err != nil {
		return err
	}
	if d.gitSHA1 != nil {
		return d.gitSHA1.(encoding.BinaryUnmarshaler).UnmarshalBinary(s1)
	}
	return nil
}

// check compares the finished hashes with the pin.
func (d *digester) check(f pins.File) error {
	if got := hex.EncodeToString(d.sha256.Sum(nil)); f.SHA256 != "" && got != f.SHA256 {
		return fmt.Errorf("%w: %s: sha256: want %s, got %s", ErrMismatch, f.Path, f.SHA256, got)
	}
	if d.gitSHA1 != nil {
		if got := hex.EncodeToString(d.gitSHA1.Sum(nil)); got != f.GitSHA1 {
			return fmt.Errorf("%w: %s: git blob sha1: want %s, got %s", ErrMismatch, f.Path, f.GitSHA1, got)
		}
	}
	return nil
}
