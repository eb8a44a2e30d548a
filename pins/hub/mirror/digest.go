package mirror

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Digests are a file's identities on the Hub.
type Digests struct {
	SHA256  string // of the content
	GitSHA1 string // git blob sha1 of the content
}

// digestKey identifies a file version: a changed size or mtime re-hashes.
type digestKey struct {
	file  string
	size  int64
	mtime time.Time
}

type digestCache struct {
	mu sync.Mutex
	m  map[digestKey]*digestEntry
}

type digestEntry struct {
	once sync.Once
	d    Digests
	err  error
}

// get returns the digests of a listed file, opened through src.
func (c *digestCache) get(src Source, e Entry) (Digests, error) {
	f, err := src.Open(e)
	if err != nil {
		return Digests{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Digests{}, err
	}
	k := digestKey{e.File, fi.Size(), fi.ModTime()}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[digestKey]*digestEntry{}
	}
	d := c.m[k]
	if d == nil {
		d = &digestEntry{}
		c.m[k] = d
	}
	c.mu.Unlock()
	d.once.Do(func() { d.d, d.err = hashBoth(f, e.File, fi.Size()) })
	return d.d, d.err
}

// hashBoth reads a file once and returns its sha256 and git blob sha1.
func hashBoth(f *os.File, name string, size int64) (Digests, error) {
	s2, s1 := sha256.New(), sha1.New()
	fmt.Fprintf(s1, "blob %d\x00", size)
	n, err := io.CopyBuffer(io.MultiWriter(s2, s1), f, make([]byte, 1<<20))
	if err != nil {
		return Digests{}, fmt.Errorf("mirror: hash %s: %w", name, err)
	}
	if n != size {
		return Digests{}, fmt.Errorf("mirror: hash %s: file changed: want %d bytes, got %d", name, size, n)
	}
	return Digests{SHA256: hex.EncodeToString(s2.Sum(nil)), GitSHA1: hex.EncodeToString(s1.Sum(nil))}, nil
}

// LFSPointer returns the git-lfs pointer file stored in git for an LFS file.
func LFSPointer(sha256hex string, size int64) string {
	return fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", sha256hex, size)
}

// GitBlobSHA1 returns the git blob sha1 of data.
func GitBlobSHA1(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

var lfsExts = []string{".safetensors", ".pth", ".bin", ".pt", ".gguf", ".onnx", ".msgpack", ".h5"}

func isLFSName(p string) bool {
	for _, e := range lfsExts {
		if strings.HasSuffix(p, e) {
			return true
		}
	}
	return false
}
