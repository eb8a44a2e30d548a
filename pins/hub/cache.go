package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/internal/atomicfile"

	"github.com/drama-tts/drama/pins"
)

// HFHome returns HF_HOME, else $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface.
func HFHome(getenv func(string) string) string {
	if v := getenv("HF_HOME"); v != "" {
		return v
	}
	if v := getenv("XDG_CACHE_HOME"); v != "" {
		return filepath.Join(v, "huggingface")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".cache", "huggingface")
}

// HubCacheDir returns HF_HUB_CACHE, else the legacy HUGGINGFACE_HUB_CACHE,
// else HFHome/hub.
func HubCacheDir(getenv func(string) string) string {
	for _, k := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return filepath.Join(HFHome(getenv), "hub")
}

// CacheFromEnv returns the cache huggingface_hub would use: HubCacheDir
// made absolute (a relative HF_HUB_CACHE is taken from the working
// directory, as huggingface_hub does, and the paths handed out stay right
// from anywhere), with hard links instead of symlinks when
// HF_HUB_DISABLE_SYMLINKS is set.
func CacheFromEnv(getenv func(string) string) Cache {
	dir := HubCacheDir(getenv)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return Cache{Dir: dir, NoSymlinks: truthy(getenv("HF_HUB_DISABLE_SYMLINKS"))}
}

// Cache is a Hugging Face hub cache directory:
//
//	<Dir>/models--<owner>--<name>/blobs/<etag>
//	<Dir>/models--<owner>--<name>/snapshots/<commit>/<path> -> ../../blobs/<etag>
//	<Dir>/models--<owner>--<name>/refs/<name>  (a commit, no newline)
type Cache struct {
	Dir string
	// NoSymlinks (HF_HUB_DISABLE_SYMLINKS) makes snapshot entries hard
	// links to their blobs (copies across filesystems) instead of symlinks.
	NoSymlinks bool
}

// RepoDir is a repository's folder in the cache.
func (c Cache) RepoDir(repo string) string {
	return filepath.Join(c.Dir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// flockPath is a flock's file of repo in huggingface_hub's folder of
// them: <Dir>/.locks/models--<owner>--<name>/<name>.
func (c Cache) flockPath(repo, name string) string {
	return repoFlockPath(c.RepoDir(repo), name)
}

// fetchFlock names a fetch's own flock in a repository's folder of flocks.
const fetchFlock = "drama-fetch.lock"

// repoFlockPath is a flock's file for the cache folder of a repository
// repoDir: <cache>/.locks/<repo folder>/<name>.
func repoFlockPath(repoDir, name string) string {
	return filepath.Join(filepath.Dir(repoDir), ".locks", filepath.Base(repoDir), name)
}

// BlobPath is where the blob named etag lives.
func (c Cache) BlobPath(repo, etag string) string {
	return filepath.Join(c.RepoDir(repo), "blobs", etag)
}

// SnapshotPath is the snapshot entry of path at commit.
func (c Cache) SnapshotPath(repo, commit, path string) string {
	return filepath.Join(c.RepoDir(repo), "snapshots", commit, filepath.FromSlash(path))
}

// BlobName is the cache's name for a pinned file's blob: the sha256 for an
// LFS file, the git blob sha1 for a small one (the Hub's ETag for each),
// else the sha256.
func BlobName(f pins.File) string {
	if !f.LFS && f.GitSHA1 != "" {
		return f.GitSHA1
	}
	return f.SHA256
}

// Link makes the snapshot entry of path point at its blob with a relative
// symlink (right for nested paths), replacing a different entry.
func (c Cache) Link(repo, commit, path, etag string) error {
	link := c.SnapshotPath(repo, commit, path)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	if c.NoSymlinks {
		_, err := linkOrCopy(c.BlobPath(repo, etag), link)
		return err
	}
	target, err := filepath.Rel(filepath.Dir(link), c.BlobPath(repo, etag))
	if err != nil {
		return err
	}
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	return atomicfile.Symlink(target, link)
}

// WriteRef records commit under refs/name, without a trailing newline, as
// huggingface_hub reads it.
func (c Cache) WriteRef(repo, name, commit string) error {
	p := filepath.Join(c.RepoDir(repo), "refs", filepath.FromSlash(name))
	if cur, err := os.ReadFile(p); err == nil && string(cur) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(p, []byte(commit), 0o644)
}

// linkOrCopy makes dst the same file as src: a hard link on the same
// filesystem, else a copy. It goes through a temporary and a rename,
// so whatever was at dst (a truncated blob, an older snapshot entry) is
// replaced whole. linked reports a hard link.
func linkOrCopy(src, dst string) (linked bool, err error) {
	a, err1 := os.Stat(src)
	b, err2 := os.Stat(dst)
	if err1 == nil && err2 == nil && os.SameFile(a, b) {
		return true, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, err
	}
	if atomicfile.Link(src, dst) == nil {
		return true, nil
	}
	return false, copyFile(src, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".*.drama-copy.incomplete")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// writeCacheTag writes CACHEDIR.TAG at the cache root if missing.
func (c Cache) writeCacheTag() {
	p := filepath.Join(c.Dir, "CACHEDIR.TAG")
	if _, err := os.Stat(p); err == nil {
		return
	}
	_ = atomicfile.WriteFile(p, []byte("Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag: the Hugging Face hub cache.\n"), 0o644)
}

// TreePath is huggingface_hub's cached listing of a commit:
// models--<owner>--<name>/trees/<commit>.json.
func (c Cache) TreePath(repo, commit string) string {
	return filepath.Join(c.RepoDir(repo), "trees", commit+".json")
}

type treeCacheEntry struct {
	Size      int64  `json:"size"`
	BlobID    string `json:"blob_id"`
	LFSSHA256 string `json:"lfs_sha256,omitempty"`
	LFSSize   *int64 `json:"lfs_size,omitempty"`
	XetHash   string `json:"xet_hash,omitempty"`
}

// WriteTree stores a commit's file listing (as the tree API gave it) the
// way huggingface_hub caches it, so that snapshot_download of that commit
// works offline: {"format_version": 1, "files": {path: {size, blob_id,
// lfs_sha256, lfs_size, xet_hash}}}. An Xet hash that is not 64 hex
// digits is left out, as huggingface_hub would refuse the whole file.
func (c Cache) WriteTree(repo, commit string, files []TreeFile) error {
	out := struct {
		FormatVersion int                       `json:"format_version"`
		Files         map[string]treeCacheEntry `json:"files"`
	}{1, map[string]treeCacheEntry{}}
	for _, f := range files {
		e := treeCacheEntry{Size: f.Size, BlobID: f.GitOID}
		if f.LFS {
			size := f.Size
			e.LFSSHA256, e.LFSSize = f.SHA256, &size
		}
		if isHex(f.XetHash, 64) {
			e.XetHash = f.XetHash
		}
		out.Files[f.Path] = e
	}
	data, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return err
	}
	p := c.TreePath(repo, commit)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(p, data, 0o644)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// pruneListings removes, from a repository folder some of whose files
// were just removed, the cached listings (trees/<commit>.json) of commits
// with no snapshot left, and drama's verified-blob record once no blob is
// left, so that a repository folder emptied of its files goes whole.
func pruneListings(repoDir string) {
	trees, _ := filepath.Glob(filepath.Join(repoDir, "trees", "*.json"))
	for _, t := range trees {
		commit := strings.TrimSuffix(filepath.Base(t), ".json")
		if _, err := os.Stat(filepath.Join(repoDir, "snapshots", commit)); errors.Is(err, os.ErrNotExist) {
			_ = os.Remove(t)
		}
	}
	_ = os.Remove(filepath.Join(repoDir, "trees")) // only when empty
	if _, err := os.Stat(filepath.Join(repoDir, "blobs")); errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(filepath.Join(repoDir, RecordName))
	}
}
