package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/drama-tts/drama/pins"
)

// RecordName is drama's record, in a repository folder of the cache, of
// the blobs it verified itself: for each blob name, the sha256 it had and
// the size, modification time, inode and device it had then. A blob whose
// identity still matches is trusted by size; any other blob (written by
// huggingface_hub, copied in, or changed since) is hashed before use.
// huggingface_hub ignores files it does not know in a repository folder.
const RecordName = ".drama-verified.json"

type blobIdentity struct {
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	Inode   uint64 `json:"inode"`
	Device  uint64 `json:"device"`
}

type blobEntry struct {
	blobIdentity
	SHA256 string `json:"sha256"`
}

// blobRecord is the record of one repository folder.
type blobRecord struct {
	path    string
	mu      sync.Mutex
	Entries map[string]blobEntry `json:"blobs"`
	dirty   bool
}

func identityOfBlob(fi os.FileInfo) blobIdentity {
	id := blobIdentity{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.Inode, id.Device = uint64(st.Ino), uint64(st.Dev)
	}
	return id
}

// loadRecord reads a repository folder's record; a missing or unreadable
// one is empty, since it only ever saves work.
func loadRecord(repoDir string) *blobRecord {
	r := &blobRecord{path: filepath.Join(repoDir, RecordName), Entries: map[string]blobEntry{}}
	data, err := os.ReadFile(r.path)
	if err != nil {
		return r
	}
	if json.Unmarshal(data, r) != nil || r.Entries == nil {
		r.Entries = map[string]blobEntry{}
	}
	return r
}

// vouches reports whether the record holds blob name with this identity
// and sha256.
func (r *blobRecord) vouches(name string, fi os.FileInfo, sha256 string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.Entries[name]
	return ok && e.blobIdentity == identityOfBlob(fi) && (sha256 == "" || e.SHA256 == sha256)
}

// add records blob name, verified against sha256, as it is on disk now.
func (r *blobRecord) add(name, path, sha256 string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Entries[name] = blobEntry{blobIdentity: identityOfBlob(fi), SHA256: sha256}
	r.dirty = true
}

func (r *blobRecord) drop(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.Entries[name]; ok {
		delete(r.Entries, name)
		r.dirty = true
	}
}

// save writes the record when it changed, dropping entries whose blob is
// gone. A failure only costs a hash next time, so it is not an error.
func (r *blobRecord) save() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.dirty {
		return
	}
	for name := range r.Entries {
		if _, err := os.Stat(filepath.Join(filepath.Dir(r.path), "blobs", name)); errors.Is(err, os.ErrNotExist) {
			delete(r.Entries, name)
		}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil || os.MkdirAll(filepath.Dir(r.path), 0o755) != nil {
		return
	}
	if atomicfile.WriteFile(r.path, append(data, '\n'), 0o644) == nil {
		r.dirty = false
	}
}

// checkBlob hashes a blob with the digests of its pin (sha256, and the
// git blob sha1 of a small file) and says whether it matches.
func checkBlob(ctx context.Context, path string, pf pins.File) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	d := newDigester(pf)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	n, err := io.CopyBuffer(d, readerCtx{ctx, f}, *bp)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if n != pf.Size {
		return fmt.Errorf("%w: %s: size: want %d, got %d", ErrMismatch, pf.Path, pf.Size, n)
	}
	return d.check(pf)
}

// readerCtx stops a long read when ctx is done.
type readerCtx struct {
	ctx context.Context
	r   io.Reader
}

func (r readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
