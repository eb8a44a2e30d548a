// Package hubtest lays out drama roots and Hugging Face caches as drama
// fetch leaves them, and serves repositories from a loopback mirror, for
// the tests of the commands that read them.
package hubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

// Layout is a drama root and the cache its installs link into.
type Layout struct {
	T     testing.TB
	Root  string
	Cache hub.Cache
}

// New returns a layout in a fresh temporary directory: <tmp>/root and the
// cache <tmp>/hub.
func New(t testing.TB) *Layout {
	d := t.TempDir()
	return &Layout{T: t, Root: filepath.Join(d, "root"), Cache: hub.Cache{Dir: filepath.Join(d, "hub")}}
}

// File returns the pin of a file with the given content.
func File(path, content string) pins.File {
	sum := sha256.Sum256([]byte(content))
	return pins.File{Path: path, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), LFS: true}
}

// Install puts files (path to content) of repo@commit into the cache as
// blobs and snapshot links, places them in <root>/<variant> as symlinks
// into the snapshot (hard links to the blobs when hard is set), writes the
// lock file and drama's refs, and returns the install.
func (x *Layout) Install(variant, repo, commit string, hard bool, files map[string]string) pins.Install {
	t := x.T
	t.Helper()
	p := &pins.Pins{Format: pins.Format, Variant: variant, Repo: repo, RepoType: "model", Revision: commit,
		License: "test", Engine: "cuda", MemoryGiB: 1}
	for path, content := range files {
		f := File(path, content)
		p.Files = append(p.Files, f)
		x.Blob(repo, f, content)
		if err := x.Cache.Link(repo, commit, path, hub.BlobName(f)); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(x.Root, variant, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if hard {
			err = os.Link(x.Cache.BlobPath(repo, hub.BlobName(f)), dst)
		} else {
			err = os.Symlink(x.Cache.SnapshotPath(repo, commit, path), dst)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteFile(filepath.Join(x.Root, variant, pins.LockFileName)); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{hub.PinnedRef, hub.RootRef(x.Root)} {
		if err := x.Cache.WriteRef(repo, ref, commit); err != nil {
			t.Fatal(err)
		}
	}
	return pins.Install{Variant: variant, Dir: filepath.Join(x.Root, variant), Pins: p}
}

// Blob writes a blob of repo for f unless it is there.
func (x *Layout) Blob(repo string, f pins.File, content string) {
	p := x.Cache.BlobPath(repo, hub.BlobName(f))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		x.T.Fatal(err)
	}
	if _, err := os.Stat(p); err == nil {
		return
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		x.T.Fatal(err)
	}
}

// Mirror serves repo at commit holding files (path to content) from a
// loopback mirror whose files lie under dir; files of lfsMin bytes or more
// are LFS files. It returns the server, for its counts, and its address;
// the server stops when the test ends.
func Mirror(t testing.TB, dir, repo, commit string, files map[string][]byte, lfsMin int64) (*mirror.Server, string) {
	t.Helper()
	for name, b := range files {
		fp := filepath.Join(dir, filepath.FromSlash(repo), commit, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fp, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := &mirror.Server{Source: mirror.DirSource{Dir: dir}}
	srv.LFSMinSize = lfsMin
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

// ReadRef returns the commit that refs/name of repo holds in c, trimmed as
// huggingface_hub reads it.
func ReadRef(c hub.Cache, repo, name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(c.RepoDir(repo), "refs", filepath.FromSlash(name)))
	return strings.TrimSpace(string(data)), err
}

// Bytes returns n bytes that depend only on seed, the content of a test
// file.
func Bytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
