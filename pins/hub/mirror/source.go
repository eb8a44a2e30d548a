package mirror

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drama-tts/drama/internal/model"

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
	// File is where the bytes are: a slash path under the source's root
	// (DIR, or the cache), opened through Source.Open.
	File string
}

// Source is where a Server finds repositories.
type Source interface {
	// Resolve maps a revision (a 40-hex commit or a ref name) to a commit.
	Resolve(repo, rev string) (string, error)
	// Files lists a commit's files sorted by path.
	Files(repo, commit string) ([]Entry, error)
	// Refs lists the repository's branches and their commits.
	Refs(repo string) (map[string]string, error)
	// Open opens a listed file for reading.
	Open(e Entry) (*os.File, error)
}

// CommitDater is implemented by a Source that knows when a commit was
// made; the mirror shows that date in its commit and model APIs.
type CommitDater interface {
	CommitTime(repo, commit string) (time.Time, error)
}

// refuser is implemented by a Source that can say why a path it does not
// list is not served (a symbolic link that leads out of its root).
type refuser interface {
	refused(repo, commit, path string) error
}

// DirSource serves Dir/<owner>/<name>/<commit>/<path>, with branches in
// Dir/<owner>/<name>/refs/<branch>. Every path is opened inside Dir (an
// os.Root): a symbolic link, to a file or a folder, is followed only when
// it is relative and stays inside Dir; one that leads out is not listed
// and not served.
type DirSource struct{ Dir string }

// CacheSource serves a Hugging Face hub cache directory (HF_HUB_CACHE),
// every path opened inside Dir as DirSource's are, so that the snapshot
// links into blobs/ are followed and links out of the cache are not.
type CacheSource struct{ Dir string }

// ErrOutside is wrapped by the error of a path that is a symbolic link
// leading out of the source's root (or an absolute one): it is not served.
var ErrOutside = errors.New("a symbolic link that is absolute or leads out of the served folder")

func (s DirSource) repoRel(repo string) string { return repo }

// Resolve implements Source.
func (s DirSource) Resolve(repo, rev string) (string, error) {
	return resolveIn(s.Dir, s.repoRel(repo), s.repoRel(repo), repo, rev)
}

// Files implements Source.
func (s DirSource) Files(repo, commit string) ([]Entry, error) {
	return walkFiles(s.Dir, s.repoRel(repo)+"/"+commit, repo, commit)
}

// Refs implements Source.
func (s DirSource) Refs(repo string) (map[string]string, error) {
	return readRefs(s.Dir, s.repoRel(repo)+"/refs")
}

// Open implements Source.
func (s DirSource) Open(e Entry) (*os.File, error) { return openIn(s.Dir, e.File) }

// CommitTime implements CommitDater: the commit directory's mtime.
func (s DirSource) CommitTime(repo, commit string) (time.Time, error) {
	return dirTime(s.Dir, s.repoRel(repo)+"/"+commit, repo, commit)
}

func (s DirSource) refused(repo, commit, p string) error {
	return refusedIn(s.Dir, s.repoRel(repo)+"/"+commit, repo, commit, p)
}

func (s CacheSource) repoRel(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}

// CommitTime implements CommitDater: the snapshot directory's mtime.
func (s CacheSource) CommitTime(repo, commit string) (time.Time, error) {
	return dirTime(s.Dir, s.repoRel(repo)+"/snapshots/"+commit, repo, commit)
}

// Resolve implements Source.
func (s CacheSource) Resolve(repo, rev string) (string, error) {
	return resolveIn(s.Dir, s.repoRel(repo), s.repoRel(repo)+"/snapshots", repo, rev)
}

// Files implements Source.
func (s CacheSource) Files(repo, commit string) ([]Entry, error) {
	return walkFiles(s.Dir, s.repoRel(repo)+"/snapshots/"+commit, repo, commit)
}

// Refs implements Source.
func (s CacheSource) Refs(repo string) (map[string]string, error) {
	return readRefs(s.Dir, s.repoRel(repo)+"/refs")
}

// Open implements Source.
func (s CacheSource) Open(e Entry) (*os.File, error) { return openIn(s.Dir, e.File) }

func (s CacheSource) refused(repo, commit, p string) error {
	return refusedIn(s.Dir, s.repoRel(repo)+"/snapshots/"+commit, repo, commit, p)
}

func dirTime(dir, rel, repo, commit string) (time.Time, error) {
	if !validRepo(repo) || !pins.IsCommit(commit) {
		return time.Time{}, fmt.Errorf("%s@%s: %w", repo, commit, ErrNotFound)
	}
	var fi fs.FileInfo
	err := inRoot(dir, func(root *os.Root) (err error) {
		fi, err = root.Stat(rel)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// inRoot runs fn on dir opened as an os.Root: every path fn opens
// resolves inside dir, and a symbolic link that leads out of it (or an
// absolute one) is an error.
func inRoot(dir string, fn func(*os.Root) error) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fn(root)
}

// openIn opens the regular file at rel inside dir.
func openIn(dir, rel string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close() // an open file outlives its root
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file: %w", rel, ErrNotFound)
	}
	return f, nil
}

// refusedIn says why p, a path the listing of commitRel left out, is not
// served: ErrOutside when p or a folder on its way is a symbolic link that
// leads out of dir, else nil.
func refusedIn(dir, commitRel, repo, commit, p string) error {
	if !validRepo(repo) || !pins.IsCommit(commit) || !fs.ValidPath(p) {
		return nil
	}
	var out error
	_ = inRoot(dir, func(root *os.Root) error {
		rel := commitRel
		for _, part := range strings.Split(p, "/") {
			rel += "/" + part
			li, err := root.Lstat(rel)
			if err != nil {
				return nil
			}
			if li.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			if _, err := root.Stat(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
				out = fmt.Errorf("%s@%s: entry %q: %q is %w; drama mirror serve serves only what lies inside it", repo, commit, p, part, ErrOutside)
				return nil
			}
		}
		return nil
	})
	return out
}

func validRepo(repo string) bool {
	owner, name, ok := strings.Cut(repo, "/")
	return ok && validSegment(owner) && validSegment(name)
}

func validSegment(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`)
}

// resolveIn maps rev to a commit: a commit directory under commits, else
// the content of repoRel/refs/<rev>, both inside dir.
func resolveIn(dir, repoRel, commits, repo, rev string) (string, error) {
	if !validRepo(repo) {
		return "", fmt.Errorf("%q: %w", repo, errNoRepo)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("%q: %w", repo, errNoRepo)
	}
	defer root.Close()
	if _, err := root.Stat(repoRel); err != nil {
		return "", fmt.Errorf("%q: %w", repo, errNoRepo)
	}
	if pins.IsCommit(rev) {
		if fi, err := root.Stat(commits + "/" + rev); err == nil && fi.IsDir() {
			return rev, nil
		}
		return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	if strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") || !fs.ValidPath(rev) {
		return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	data, err := root.ReadFile(repoRel + "/refs/" + rev)
	if err != nil {
		return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	c := strings.TrimSpace(string(data))
	if !pins.IsCommit(c) {
		return "", fmt.Errorf("revision %q: ref holds %q, not a commit: %w", rev, c, ErrNotFound)
	}
	return c, nil
}

// walkFiles lists the regular files under rel inside dir. A symbolic link
// is followed, to a file or a folder, when it stays inside dir; one that
// leads out (or is absolute, or dangles) is left out, and so is a folder
// link back to one of its own parents. .git and drama's state folder are
// skipped.
func walkFiles(dir, rel, repo, commit string) ([]Entry, error) {
	if !validRepo(repo) || !pins.IsCommit(commit) {
		return nil, fmt.Errorf("%s@%s: %w", repo, commit, ErrNotFound)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s@%s: %w", repo, commit, ErrNotFound)
		}
		return nil, err
	}
	defer root.Close()
	top, err := root.Stat(rel)
	if err != nil || !top.IsDir() {
		return nil, fmt.Errorf("%s@%s: %w", repo, commit, ErrNotFound)
	}
	var out []Entry
	var walk func(d, prefix string, up []fs.FileInfo) error
	walk = func(d, prefix string, up []fs.FileInfo) error {
		ents, err := fs.ReadDir(root.FS(), d)
		if err != nil {
			return err
		}
		for _, de := range ents {
			child := d + "/" + de.Name()
			fi, err := root.Stat(child) // follows links that stay inside dir
			if err != nil {
				continue
			}
			switch {
			case fi.IsDir():
				if de.Name() == ".git" || de.Name() == model.StateDirName || slices.ContainsFunc(up, func(u fs.FileInfo) bool { return os.SameFile(u, fi) }) {
					continue
				}
				if err := walk(child, prefix+de.Name()+"/", append(up, fi)); err != nil {
					return err
				}
			case fi.Mode().IsRegular():
				out = append(out, Entry{Path: prefix + de.Name(), Size: fi.Size(), File: child})
			}
		}
		return nil
	}
	if err := walk(rel, "", []fs.FileInfo{top}); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// readRefs reads the branches under rel inside dir: each file's path is a
// branch name, its content a commit.
func readRefs(dir, rel string) (map[string]string, error) {
	refs := map[string]string{}
	err := inRoot(dir, func(root *os.Root) error {
		return fs.WalkDir(root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			data, err := root.ReadFile(p)
			if c := strings.TrimSpace(string(data)); err == nil && pins.IsCommit(c) {
				refs[strings.TrimPrefix(p, rel+"/")] = c
			}
			return nil
		})
	})
	if errors.Is(err, fs.ErrNotExist) {
		return refs, nil
	}
	return refs, err
}
