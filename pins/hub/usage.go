package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drama-tts/drama/pins"
)

// RootRef is the cache ref drama fetch writes for one root beside
// PinnedRef: "drama-root-" and the first 12 hex digits of the sha256 of the
// root's absolute path. It tells drama rm that another root on the same
// cache still uses a commit, and keeps the snapshot from "hf cache prune".
func RootRef(root string) string {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	sum := sha256.Sum256([]byte(root))
	return rootRefPrefix + hex.EncodeToString(sum[:6])
}

const rootRefPrefix = "drama-root-"

// Placed is where one pinned file of an install lives on disk.
type Placed struct {
	Path     string // the pinned, slash-separated path
	File     string // the file in the variant directory
	Snapshot string // its cache snapshot entry; "" when not from a cache
	Blob     string // its cache blob; "" when not from a cache
	RepoDir  string // the cache folder of its repository; "" when not from a cache
	Size     int64  // the content's size; 0 when missing
	ID       pins.FileID
	Links    uint64 // hard links to the content
	Missing  bool
}

// Locate finds where each pinned file of an install lives: the file in the
// variant directory, and for a file fetched through a cache its snapshot
// entry and blob. A symlink names its snapshot entry itself; a hard link
// is matched against the blob of the same name in each of caches.
func Locate(in pins.Install, caches []Cache) []Placed {
	out := make([]Placed, 0, len(in.Pins.Files))
	for _, f := range in.Pins.Files {
		pl := Placed{Path: f.Path, File: filepath.Join(in.Dir, filepath.FromSlash(f.Path))}
		fi, err := os.Stat(pl.File)
		if err != nil || !fi.Mode().IsRegular() {
			pl.Missing = true
			out = append(out, pl)
			continue
		}
		pl.Size = fi.Size()
		pl.ID, pl.Links = pins.IDOf(fi)
		if target, err := os.Readlink(pl.File); err == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(pl.File), target)
			}
			pl.Snapshot = target
			pl.RepoDir = repoDirOf(target, f.Path)
		} else {
			for _, c := range caches {
				if in.Pins.Repo == "" {
					break
				}
				if b, err := os.Stat(c.BlobPath(in.Pins.Repo, BlobName(f))); err == nil && os.SameFile(b, fi) {
					pl.RepoDir = c.RepoDir(in.Pins.Repo)
					pl.Snapshot = c.SnapshotPath(in.Pins.Repo, in.Pins.Revision, f.Path)
					break
				}
			}
		}
		if pl.RepoDir != "" {
			pl.Blob = blobOf(pl.RepoDir, pl.Snapshot, BlobName(f), fi)
		}
		out = append(out, pl)
	}
	return out
}

// repoDirOf returns the repository folder of a snapshot entry
// <repo>/snapshots/<commit>/<path>, or "" when it is not shaped so.
func repoDirOf(snapshot, path string) string {
	commitDir := strings.TrimSuffix(filepath.Clean(snapshot), string(filepath.Separator)+filepath.FromSlash(path))
	if commitDir == filepath.Clean(snapshot) || filepath.Base(filepath.Dir(commitDir)) != "snapshots" {
		return ""
	}
	return filepath.Dir(filepath.Dir(commitDir))
}

// blobOf returns the blob of a snapshot entry: where its symlink points,
// else the blob named etag when it is the same file.
func blobOf(repoDir, snapshot, etag string, content os.FileInfo) string {
	if t, err := os.Readlink(snapshot); err == nil {
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(snapshot), t)
		}
		return filepath.Clean(t)
	}
	p := filepath.Join(repoDir, "blobs", etag)
	if b, err := os.Stat(p); err == nil && os.SameFile(b, content) {
		return p
	}
	return ""
}

// Usage is the disk use of a root's installs, each file's content counted
// once however many variants, links and snapshots share it.
type Usage struct {
	Variants map[string]*VariantUsage
	Bytes    int64 // over all installs
}

// VariantUsage is one install's share of Usage.
type VariantUsage struct {
	Bytes       int64    `json:"bytes"`        // its files' content, each counted once
	Missing     int      `json:"missing"`      // pinned files absent
	SharedBytes int64    `json:"shared_bytes"` // content it shares with other variants
	SharedWith  []string `json:"shared_with"`  // those variants
	// CacheBytes is content held as well by something else in the HF
	// cache (another snapshot or ref, another hard link): drama rm keeps it.
	CacheBytes int64 `json:"cache_bytes"`
}

// DiskUsage measures the installs. placed maps each install's variant to
// Locate's answer for it.
func DiskUsage(installs []pins.Install, placed map[string][]Placed) *Usage {
	u := &Usage{Variants: map[string]*VariantUsage{}}
	users := map[pins.FileID]map[string]bool{}
	size := map[pins.FileID]int64{}
	for _, in := range installs {
		for _, pl := range placed[in.Variant] {
			if pl.Missing {
				continue
			}
			if users[pl.ID] == nil {
				users[pl.ID] = map[string]bool{}
			}
			users[pl.ID][in.Variant] = true
			size[pl.ID] = pl.Size
		}
	}
	for id := range users {
		u.Bytes += size[id]
	}
	for _, in := range installs {
		vu := &VariantUsage{SharedWith: []string{}}
		seen := map[pins.FileID]bool{}
		with := map[string]bool{}
		for _, pl := range placed[in.Variant] {
			if pl.Missing {
				vu.Missing++
				continue
			}
			if seen[pl.ID] {
				continue
			}
			seen[pl.ID] = true
			vu.Bytes += pl.Size
			if len(users[pl.ID]) > 1 {
				vu.SharedBytes += pl.Size
				for v := range users[pl.ID] {
					if v != in.Variant {
						with[v] = true
					}
				}
			}
		}
		for v := range with {
			vu.SharedWith = append(vu.SharedWith, v)
		}
		sort.Strings(vu.SharedWith)
		u.Variants[in.Variant] = vu
	}
	return u
}

// Holders scans the repository folders of placed files for what else in
// the cache holds each content: snapshot entries other than those in own,
// and refs other than the given ones pointing at a commit. It returns,
// per content, the first holder found, in words.
func Holders(placed []Placed, own map[string]bool, ownRefs map[string]bool) (map[pins.FileID]string, error) {
	held := map[pins.FileID]string{}
	repos := map[string]bool{}
	for _, pl := range placed {
		if pl.RepoDir != "" {
			repos[pl.RepoDir] = true
		}
	}
	for repo := range repos {
		refs, err := readRefs(repo)
		if err != nil {
			return nil, err
		}
		snaps := filepath.Join(repo, "snapshots")
		err = walkFiles(snaps, func(p, rel string) error {
			commit, _, _ := strings.Cut(rel, "/")
			var why string
			if !own[p] {
				why = "snapshot " + commit + " of " + repoName(repo)
			} else {
				// name the other user's ref rather than the shared drama-pinned
				for _, name := range refs[commit] {
					if !ownRefs[name] && (why == "" || name != PinnedRef) {
						why = "ref " + name + " of " + repoName(repo)
					}
				}
			}
			if why == "" {
				return nil
			}
			fi, err := os.Stat(p)
			if err != nil {
				return nil // a dangling entry holds nothing
			}
			id, _ := pins.IDOf(fi)
			if _, ok := held[id]; !ok {
				held[id] = why
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return held, nil
}

// readRefs maps each commit of a repository folder to the refs naming it.
func readRefs(repo string) (map[string][]string, error) {
	out := map[string][]string{}
	dir := filepath.Join(repo, "refs")
	err := walkFiles(dir, func(p, rel string) error {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		c := strings.TrimSpace(string(data))
		out[c] = append(out[c], rel)
		return nil
	})
	for c := range out {
		sort.Strings(out[c])
	}
	return out, err
}

// walkFiles calls fn with the path of every file under dir and its
// slash-separated name relative to dir; a dir that does not exist holds
// none.
func walkFiles(dir string, fn func(p, rel string) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		return fn(p, filepath.ToSlash(rel))
	})
}

// repoName turns models--owner--name back into owner/name.
func repoName(repoDir string) string {
	b := filepath.Base(repoDir)
	_, rest, ok := strings.Cut(b, "--")
	if !ok {
		return b
	}
	return strings.Replace(rest, "--", "/", 1)
}

// OwnRefs are the refs of a repository folder that belong to root's
// install of commit: RootRef(root), and PinnedRef unless another root's
// ref still names the commit.
func OwnRefs(repoDir, root, commit string) (map[string]bool, error) {
	refs, err := readRefs(repoDir)
	if err != nil {
		return nil, err
	}
	mine := RootRef(root)
	own := map[string]bool{mine: true, PinnedRef: true}
	for _, name := range refs[commit] {
		if strings.HasPrefix(name, rootRefPrefix) && name != mine {
			own[PinnedRef] = false
		}
	}
	return own, nil
}

// Removal is what drama rm deletes for one install, and what it keeps.
type Removal struct {
	Files     []string // files of the variant directory: pinned files, the lock file, drama's state
	Snapshots []string // cache snapshot entries
	Blobs     []string // cache blobs
	Refs      []string // cache ref files
	Kept      []Kept   // blobs kept, and why
	Extra     []string // files in the variant directory drama did not put there, kept
	Freed     int64    // bytes whose last link goes
}

// Kept is a blob drama rm leaves, with what still uses it.
type Kept struct {
	Blob string `json:"blob"`
	Size int64  `json:"size"`
	Why  string `json:"why"`
}

// PlanRemoval decides what removing install target deletes. others are
// the root's other installs with Locate's answers; a content any of them
// uses, or that anything else in the cache holds (Holders), is kept, and
// so is every snapshot entry another install links to.
func PlanRemoval(root string, target pins.Install, placed []Placed, others map[string][]Placed) (*Removal, error) {
	r := &Removal{}
	usedBy, otherSnaps := usedByOthers(others)
	own := map[string]bool{}
	for _, pl := range placed {
		if pl.Snapshot != "" {
			own[pl.Snapshot] = true
		}
	}
	ownRefs, refFiles, err := removedRefs(root, target.Pins.Revision, placed, others)
	if err != nil {
		return nil, err
	}
	held, err := Holders(placed, own, ownRefs)
	if err != nil {
		return nil, err
	}
	links := newLinkTally()
	blobSeen := map[string]bool{}
	for _, pl := range placed {
		r.Files = append(r.Files, pl.File)
		links.add(pl.File)
		if pl.Missing || pl.RepoDir == "" {
			continue
		}
		why := usedBy[pl.ID]
		if why == "" {
			why = held[pl.ID]
		}
		if why != "" {
			if pl.Blob != "" && !blobSeen[pl.Blob] {
				blobSeen[pl.Blob] = true
				r.Kept = append(r.Kept, Kept{Blob: pl.Blob, Size: pl.Size, Why: why})
			}
			if !otherSnaps[pl.Snapshot] && held[pl.ID] == "" {
				r.Snapshots = append(r.Snapshots, pl.Snapshot)
				links.add(pl.Snapshot)
			}
			continue
		}
		if !otherSnaps[pl.Snapshot] {
			r.Snapshots = append(r.Snapshots, pl.Snapshot)
			links.add(pl.Snapshot)
		}
		if pl.Blob != "" && !blobSeen[pl.Blob] {
			blobSeen[pl.Blob] = true
			r.Blobs = append(r.Blobs, pl.Blob)
			links.add(pl.Blob)
		}
	}
	r.Refs = refFiles
	r.Files = append(r.Files, filepath.Join(target.Dir, pins.LockFileName))
	state := filepath.Join(target.Dir, pins.StateDirName)
	extra, err := extraIn(target.Dir, r.Files, state)
	if err != nil {
		return nil, err
	}
	r.Extra = extra
	r.Freed = links.freed()
	return r, nil
}

// usedByOthers returns what the root's other installs use: each content
// they have in place, with the variant that uses it, and the snapshot
// entries they link to.
func usedByOthers(others map[string][]Placed) (usedBy map[pins.FileID]string, snapshots map[string]bool) {
	usedBy = map[pins.FileID]string{}
	snapshots = map[string]bool{}
	for v, pls := range others {
		for _, pl := range pls {
			if !pl.Missing {
				usedBy[pl.ID] = "variant " + v
			}
			if pl.Snapshot != "" {
				snapshots[pl.Snapshot] = true
			}
		}
	}
	return usedBy, snapshots
}

// removedRefs returns the refs naming revision in the repositories of
// placed that are the install's own (OwnRefs), and the ref files that go
// with it: drama's refs go with the root's last install from a
// repository.
func removedRefs(root, revision string, placed []Placed, others map[string][]Placed) (map[string]bool, []string, error) {
	ownRefs := map[string]bool{}
	var refFiles []string
	repos := map[string]bool{}
	for _, pl := range placed {
		if pl.RepoDir == "" || repos[pl.RepoDir] {
			continue
		}
		repos[pl.RepoDir] = true
		o, err := OwnRefs(pl.RepoDir, root, revision)
		if err != nil {
			return nil, nil, err
		}
		refs, _ := readRefs(pl.RepoDir)
		for _, name := range refs[revision] {
			if o[name] {
				ownRefs[name] = true
				if len(othersAt(others, pl.RepoDir)) == 0 {
					refFiles = append(refFiles, filepath.Join(pl.RepoDir, "refs", filepath.FromSlash(name)))
				}
			}
		}
	}
	return ownRefs, refFiles, nil
}

// linkTally counts, per content, the links a removal deletes, to tell
// the contents whose last link goes.
type linkTally struct {
	links, nlink map[pins.FileID]uint64
	sizes        map[pins.FileID]int64
}

func newLinkTally() *linkTally {
	return &linkTally{links: map[pins.FileID]uint64{}, nlink: map[pins.FileID]uint64{}, sizes: map[pins.FileID]int64{}}
}

// add counts p, when it is a regular file, as one link deleted.
func (t *linkTally) add(p string) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	id, n := pins.IDOf(fi)
	t.links[id]++
	t.sizes[id], t.nlink[id] = fi.Size(), n
}

// freed returns the bytes of the contents all of whose links were counted.
func (t *linkTally) freed() int64 {
	var freed int64
	for id, n := range t.links {
		if n >= t.nlink[id] {
			freed += t.sizes[id]
		}
	}
	return freed
}

// othersAt returns the other installs with a file in repoDir.
func othersAt(others map[string][]Placed, repoDir string) []string {
	var out []string
	for v, pls := range others {
		for _, pl := range pls {
			if pl.RepoDir == repoDir {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// extraIn lists the files under dir that are neither in known nor under
// skip.
func extraIn(dir string, known []string, skip string) ([]string, error) {
	k := map[string]bool{}
	for _, p := range known {
		k[p] = true
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		if !d.IsDir() && !k[p] {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Apply deletes what r names: the variant's files and drama's state, the
// snapshot entries, the blobs and the refs, then the folders left empty
// (the variant directory, snapshot folders, a repository folder with
// nothing left). A file already gone is no error.
func (r *Removal) Apply(variantDir string) error {
	var errs []error
	rm := func(p string) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, group := range [][]string{r.Files, r.Snapshots, r.Blobs, r.Refs} {
		for _, p := range group {
			rm(p)
		}
	}
	if err := os.RemoveAll(filepath.Join(variantDir, pins.StateDirName)); err != nil {
		errs = append(errs, err)
	}
	pruneEmpty(variantDir)
	repos := map[string]bool{}
	for _, group := range [][]string{r.Snapshots, r.Blobs, r.Refs} {
		for _, p := range group {
			// <repo>/<snapshots|blobs|refs>/...
			for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
				if b := filepath.Base(d); b == "snapshots" || b == "blobs" || b == "refs" {
					repos[filepath.Dir(d)] = true
					break
				}
			}
		}
	}
	for repo := range repos {
		for _, sub := range []string{"snapshots", "refs", "blobs"} {
			pruneEmpty(filepath.Join(repo, sub))
		}
		pruneListings(repo)
		_ = os.Remove(repo) // only when empty
	}
	if len(errs) > 0 {
		return fmt.Errorf("rm: %w", errors.Join(errs...))
	}
	return nil
}

// pruneEmpty removes the empty folders under dir, and dir when it ends
// empty.
func pruneEmpty(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // fails when not empty
	}
}

// FlockRepos takes a fetch's flock (.locks/<repo folder>/drama-fetch.lock)
// on the cache folder of every repository placed names, so that no fetch
// links to a blob while a removal decides about it. release releases them.
func FlockRepos(ctx context.Context, placed []Placed, wait time.Duration) (release func(), err error) {
	seen := map[string]bool{}
	var releases []func()
	release = func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}
	for _, pl := range placed {
		if pl.RepoDir == "" || seen[pl.RepoDir] {
			continue
		}
		seen[pl.RepoDir] = true
		r, err := Flock(ctx, repoFlockPath(pl.RepoDir, fetchFlock), wait)
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, r)
	}
	return release, nil
}
