package hub

import (
	"context"
	"errors"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

// hfLookup finds a file the way huggingface_hub's try_to_load_from_cache
// and offline snapshot_download do: the revision is a commit or the raw
// (unstripped) content of refs/<revision>; the file is
// snapshots/<commit>/<path> and must be a regular file after following
// links. It also applies the cache scanner's rules: no broken link in a
// snapshot, a ref's content names an existing snapshot.
func hfLookup(t *testing.T, cacheDir, repo, revision, path string) (string, error) {
	t.Helper()
	repoDir := filepath.Join(cacheDir, "models--"+strings.ReplaceAll(repo, "/", "--"))
	commit := revision
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(revision) {
		data, err := os.ReadFile(filepath.Join(repoDir, "refs", revision))
		if err != nil {
			return "", err
		}
		commit = string(data) // no strip, as huggingface_hub reads it
	}
	snap := filepath.Join(repoDir, "snapshots", commit)
	if fi, err := os.Stat(snap); err != nil || !fi.IsDir() {
		return "", errors.New("ref names no snapshot: " + commit)
	}
	p := filepath.Join(snap, filepath.FromSlash(path))
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return "", errors.New("not a regular file: " + p)
	}
	return p, nil
}

// scanSnapshots applies the cache scanner's corruption rules to a repo.
func scanSnapshots(t *testing.T, repoDir string) {
	t.Helper()
	filepath.WalkDir(filepath.Join(repoDir, "snapshots"), func(p string, d fs.DirEntry, err error) error {
		if d == nil || d.IsDir() {
			return nil
		}
		if filepath.Dir(p) == filepath.Join(repoDir, "snapshots") {
			t.Errorf("a file directly under snapshots/: %s", p)
		}
		target, lerr := os.Readlink(p)
		if lerr != nil {
			t.Errorf("%s: not a symlink", p)
			return nil
		}
		if filepath.IsAbs(target) {
			t.Errorf("%s: absolute link %s", p, target)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: broken link to %s", p, target)
		}
		return nil
	})
}

func TestCacheReadableByHFRules(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf := fx.addRepo(repoA, commitA, files)
	cache := filepath.Join(fx.dir, "cache")
	if _, err := fx.fetcher(cache).Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		for _, rev := range []string{commitA, PinnedRef} {
			p, err := hfLookup(t, cache, repoA, rev, name)
			if err != nil {
				t.Errorf("%s@%s: %v", name, rev, err)
				continue
			}
			if got, _ := os.ReadFile(p); string(got) != string(want) {
				t.Errorf("%s@%s: content differs", name, rev)
			}
		}
	}
	repoDir := Cache{Dir: cache}.RepoDir(repoA)
	scanSnapshots(t, repoDir)
	// Blob names: sha256 for LFS files, git blob sha1 for the small one.
	for _, p := range pf {
		want := p.SHA256
		if !p.LFS {
			want = p.GitSHA1
		}
		if _, err := os.Stat(filepath.Join(repoDir, "blobs", want)); err != nil {
			t.Errorf("%s: blob %s: %v", p.Path, want, err)
		}
	}
	if target, _ := os.Readlink(filepath.Join(repoDir, "snapshots", commitA, "sub", "dir", "codec.pth")); !strings.HasPrefix(target, "../../../../blobs/") {
		t.Errorf("nested link: want ../../../../blobs/..., got %s", target)
	}
	if _, err := os.Stat(filepath.Join(cache, "CACHEDIR.TAG")); err != nil {
		t.Error("no CACHEDIR.TAG")
	}
}

func TestBranchRefWrittenWhenHeadIsPinned(t *testing.T) {
	fx := newFixture(t)
	pf := fx.addRepo(repoA, commitA, threeFiles())
	refs := filepath.Join(fx.dir, "mirror", "org", "model", "refs")
	os.MkdirAll(refs, 0o755)
	os.WriteFile(filepath.Join(refs, "main"), []byte(commitA), 0o644)
	cache := filepath.Join(fx.dir, "cache")
	if _, err := fx.fetcher(cache).Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(Cache{Dir: cache}.RepoDir(repoA), "refs", "main"))
	if err != nil || string(data) != commitA {
		t.Errorf("refs/main: want %q without newline, got %q %v", commitA, data, err)
	}
}

// TestFindsHFLaidOutCache: a cache written by huggingface_hub's rules is
// used as is: nothing is downloaded.
func TestFindsHFLaidOutCache(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf := fx.addRepo(repoA, commitA, files)
	cache := Cache{Dir: filepath.Join(fx.dir, "hfcache")}
	for _, p := range pf {
		blob := cache.BlobPath(repoA, BlobName(p))
		os.MkdirAll(filepath.Dir(blob), 0o755)
		os.WriteFile(blob, files[p.Path], 0o644)
		if err := cache.Link(repoA, commitA, p.Path, BlobName(p)); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(cache.RepoDir(repoA), "refs"), 0o755)
	os.WriteFile(filepath.Join(cache.RepoDir(repoA), "refs", "main"), []byte(commitA+"\n"), 0o644) // hand-written, with newline
	res, err := fx.fetcher(cache.Dir).Fetch(ctxT(t), repoA, commitA, pf)
	if err != nil {
		t.Fatal(err)
	}
	if st := fx.srv.Stats(); st.DataRequests != 0 || st.HeadRequests != 0 {
		t.Errorf("want 0 downloads from an HF-laid-out cache, got %+v", st)
	}
	for _, r := range res.Files {
		if r.How != HowPresent {
			t.Errorf("%s: want present, got %s", r.Path, r.How)
		}
	}
	if data, err := os.ReadFile(filepath.Join(cache.RepoDir(repoA), "refs", "main")); err != nil || strings.TrimSpace(string(data)) != commitA {
		t.Errorf("refs/main: want %s, got %q %v", commitA, data, err)
	}
}

// TestServeFetchedCacheToAnotherHost: fetch once, serve that cache with the
// mirror, fetch from it into a second cache: the multi-host flow.
func TestServeFetchedCacheToAnotherHost(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf := fx.addRepo(repoA, commitA, files)
	first := filepath.Join(fx.dir, "cache1")
	if _, err := fx.fetcher(first).Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	srv := &mirror.Server{Source: mirror.CacheSource{Dir: first}}
	srv.LFSMinSize = 64 << 10
	ts := httptest.NewServer(srv)
	defer ts.Close()
	second := fx.fetcher(filepath.Join(fx.dir, "cache2"))
	second.Client = New(ts.URL, "", 4)
	// By the drama-owned ref as a revision, as another host would.
	if c, err := second.Client.Tree(ctxT(t), repoA, PinnedRef); err != nil || len(c) != len(files) {
		t.Fatalf("tree by ref: %v %d", err, len(c))
	}
	if _, err := second.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	checkCache(t, second.Cache, repoA, commitA, files)
	if st := srv.Stats(); st.HeadRequests != int64(len(files)) {
		t.Errorf("want one HEAD per file from the cache mirror, got %d", st.HeadRequests)
	}
}

func TestNoSymlinksHardLinksSnapshots(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	f.Cache.NoSymlinks = true
	fetchOK(t, f, pf, files)
	for _, p := range pf {
		snap := f.Cache.SnapshotPath(repoA, commitA, p.Path)
		li, _ := os.Lstat(snap)
		a, _ := os.Stat(snap)
		b, _ := os.Stat(f.Cache.BlobPath(repoA, BlobName(p)))
		if li == nil || li.Mode()&os.ModeSymlink != 0 || !os.SameFile(a, b) {
			t.Errorf("%s: want a hard link to the blob", p.Path)
		}
	}
	if _, err := hfLookup(t, f.Cache.Dir, repoA, PinnedRef, "sub/dir/codec.pth"); err != nil {
		t.Error(err)
	}
}

// TestFetchRefusesUndigestedPins: a pin without a digest is pins.ErrIncomplete
// naming the file, and the error names no command (drama fetch locks first).
func TestFetchRefusesUndigestedPins(t *testing.T) {
	f := &Fetcher{Client: New("http://127.0.0.1:1", "", 1), Cache: Cache{Dir: t.TempDir()}}
	_, err := f.Fetch(context.Background(), "o/r", strings.Repeat("c", 40), []pins.File{{Path: "model.bin", Size: 3}})
	if !errors.Is(err, pins.ErrIncomplete) || !strings.Contains(err.Error(), "model.bin") || strings.Contains(err.Error(), "drama ") {
		t.Fatalf("want pins.ErrIncomplete naming model.bin and no command, got %v", err)
	}
}
