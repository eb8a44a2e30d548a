package mirror

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine/model"

	"github.com/drama-tts/drama/pins"
)

// ErrNotFound is wrapped by a Source's errors for a repository, revision or
// file it does not have.
var ErrNotFound = errors.New("not found")

// errNoRepo marks a missing repository, as opposed to a missing revision
// or file of one that exists; it wraps ErrNotFound.
var errNoRepo = fmt.Errorf("repository %w", ErrNotFound)

// Entry is one file of a repository at a commit.
type Entry struct {
	Path string // slash-separated, relative to the repository root
	Size int64
	Abs  string // where the bytes are on disk
}

// Source is where a Server finds repositories.
type Source interface {
	// Resolve maps a revision (a 40-hex commit or a ref name) to a commit.
	Resolve(repo, rev string) (string, error)
	// Files lists a commit's files sorted by path.
	Files(repo, commit string) ([]Entry, error)
	// Refs lists the repository's branches and their commits.
	Refs(repo string) (map[string]string, error)
}

// CommitDater is implemented by a Source that knows when a commit was
// made; the mirror shows that date in its commit and model APIs.
type CommitDater interface {
	CommitTime(repo, commit string) (time.Time, error)
}

// DirSource serves Dir/<owner>/<name>/<commit>/<path>, with branches in
// Dir/<owner>/<name>/refs/<branch>.
type DirSource struct{ Dir string }

// CacheSource serves a Hugging Face hub cache directory (HF_HUB_CACHE).
type CacheSource struct{ Dir string }

func (s DirSource) repoDir(repo string) string { return filepath.Join(s.Dir, filepath.FromSlash(repo)) }

// Resolve implements Source.
func (s DirSource) Resolve(repo, rev string) (string, error) {
	return resolveIn(s.repoDir(repo), s.repoDir(repo), repo, rev)
}

// Files implements Source.
func (s DirSource) Files(repo, commit string) ([]Entry, error) {
	return walkFiles(filepath.Join(s.repoDir(repo), commit), repo, commit)
}

// Refs implements Source.
func (s DirSource) Refs(repo string) (map[string]string, error) {
	return readRefs(filepath.Join(s.repoDir(repo), "refs"))
}

// CommitTime implements CommitDater: the commit directory's mtime.
func (s DirSource) CommitTime(repo, commit string) (time.Time, error) {
	return dirTime(filepath.Join(s.repoDir(repo), commit), repo, commit)
}

// CommitTime implements CommitDater: the snapshot directory's mtime.
func (s CacheSource) CommitTime(repo, commit string) (time.Time, error) {
	return dirTime(filepath.Join(s.repoDir(repo), "snapshots", commit), repo, commit)
}

func dirTime(dir, repo, commit string) (time.Time, error) {
	if !validRepo(repo) || !pins.IsCommit(commit) {
		return time.Time{}, fmt.Errorf("%s@%s: %w", repo, commit, ErrNotFound)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

func (s CacheSource) repoDir(repo string) string {
	return filepath.Join(s.Dir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// Resolve implements Source.
func (s CacheSource) Resolve(repo, rev string) (string, error) {
	return resolveIn(s.repoDir(repo), filepath.Join(s.repoDir(repo), "snapshots"), repo, rev)
}

// Files implements Source.
func (s CacheSource) Files(repo, commit string) ([]Entry, error) {
	return walkFiles(filepath.Join(s.repoDir(repo), "snapshots", commit), repo, commit)
}

// Refs implements Source.
func (s CacheSource) Refs(repo string) (map[string]string, error) {
	return readRefs(filepath.Join(s.repoDir(repo), "refs"))
}

func validRepo(repo string) bool {
	owner, name, ok := strings.Cut(repo, "/")
	return ok && validSegment(owner) && validSegment(name)
}

func validSegment(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`)
}

// resolveIn maps rev to a commit: a commit directory under commits, else
// the content of repoDir/refs/<rev>.
func resolveIn(repoDir, commits, repo, rev string) (string, error) {
	if !validRepo(repo) {
		return "", fmt.Errorf("%q: %w", repo, errNoRepo)
	}
	if _, err := os.Stat(repoDir); err != nil {
		return "", fmt.Errorf("%q: %w", repo, errNoRepo)
	}
	if pins.IsCommit(rev) {
		if fi, err := os.Stat(filepath.Join(commits, rev)); err == nil && fi.IsDir() {
			return rev, nil
		}
		return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	if strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") {
		return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	data, err := os.ReadFile(filepath.Join(repoDir, "refs", filepath.FromSlash(rev)))
	if err != nil {
		return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	c := strings.TrimSpace(string(data))
	if !pins.IsCommit(c) {
		return "", fmt.Errorf("revision %q: ref holds %q, not a commit: %w", rev, c, ErrNotFound)
	}
	return c, nil
}

func walkFiles(root, repo, commit string) ([]Entry, error) {
	if !validRepo(repo) || !pins.IsCommit(commit) {
		return nil, fmt.Errorf("%s@%s: %w", repo, commit, ErrNotFound)
	}
	var out []Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == model.StateDirName {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Stat(p) // follows snapshot links into blobs/
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, Entry{Path: filepath.ToSlash(rel), Size: fi.Size(), Abs: p})
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s@%s: %w", repo, commit, ErrNotFound)
		}
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func readRefs(dir string) (map[string]string, error) {
	refs := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if c := strings.TrimSpace(string(data)); err == nil && pins.IsCommit(c) {
			rel, _ := filepath.Rel(dir, p)
			refs[filepath.ToSlash(rel)] = c
		}
		return nil
	})
	return refs, err
}
