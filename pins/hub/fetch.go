package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/pins"
)

// PinnedRef is the ref drama writes in the cache for the commit it
// fetched, so huggingface_hub finds it offline by that name too and
// "hf cache prune" keeps it.
const PinnedRef = "drama-pinned"

// Fetcher puts a pinned commit's files into a Hugging Face cache. Its
// fields are settings: Fetch reads them and changes none, so one Fetcher
// serves any number of fetches, at once too.
type Fetcher struct {
	Client    *Client // nil or unused when Offline
	Cache     Cache
	Offline   bool            // HF_HUB_OFFLINE: no network; everything must be present
	Download  DownloadOptions // how missing files are downloaded
	FlockWait time.Duration   // bound on waiting for another fetch's flocks (default 1 min)
}

// fetchRun is one Fetch: its own copy of the settings (the cache folder
// made absolute, a client that reports retries as events) and the
// verified-blob records it reads and writes.
type fetchRun struct {
	Fetcher
	recMu   sync.Mutex
	records map[string]*blobRecord // by repository folder
}

// flockWait bounds the wait for each flock a fetch takes.
func (f *Fetcher) flockWait() time.Duration { return orDefault(f.FlockWait, time.Minute) }

func (f *fetchRun) emit(e Event) {
	if f.Download.Event != nil {
		f.Download.Event(e)
	}
}

// How says how a file came to be in the cache.
type How string

// The ways a file arrives.
const (
	HowPresent    How = "present"    // already in the cache
	HowShared     How = "shared"     // linked or copied from another repository's blob
	HowDownloaded How = "downloaded" // fetched in this run
)

// FileResult is the outcome for one file.
type FileResult struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	Blob     string `json:"blob"`
	Snapshot string `json:"snapshot"`
	How      How    `json:"how"`
}

// Result is the outcome of a fetch.
type Result struct {
	Repo   string       `json:"repo"`
	Commit string       `json:"commit"`
	Files  []FileResult `json:"files"`
}

// Fetch makes every file present and verified in the cache under
// snapshots/<commit>, then writes the refs. files must carry digests: a
// file without one is an error wrapping pins.ErrIncomplete. Its errors
// begin "hub: fetch: ".
func (s *Fetcher) Fetch(ctx context.Context, repo, commit string, files []pins.File) (*Result, error) {
	res, err := s.fetch(ctx, repo, commit, files)
	if err != nil {
		return nil, wrap(err, "hub: fetch")
	}
	return res, nil
}

func (s *Fetcher) fetch(ctx context.Context, repo, commit string, files []pins.File) (*Result, error) {
	if !pins.IsCommit(commit) {
		return nil, fmt.Errorf("revision %q: want a full 40-hex commit", commit)
	}
	for _, pf := range files {
		if err := pins.CheckPath(pf.Path); err != nil {
			return nil, err
		}
		if BlobName(pf) == "" {
			return nil, fmt.Errorf("%s: the pin has no digest: %w", pf.Path, pins.ErrIncomplete)
		}
	}
	f := &fetchRun{Fetcher: *s, records: map[string]*blobRecord{}}
	// The paths in the result must name the files from anywhere.
	if dir, err := filepath.Abs(f.Cache.Dir); err == nil {
		f.Cache.Dir = dir
	}
	if s.Client != nil && s.Client.OnRetry == nil {
		c := *s.Client
		c.OnRetry = func(r Retry) { f.emit(Event{Kind: EventRetry, Path: r.What, Error: r.Message()}) }
		f.Client = &c
	}
	release, err := Flock(ctx, f.Cache.flockPath(repo, fetchFlock), f.flockWait())
	if err != nil {
		return nil, err
	}
	defer release()
	defer f.saveRecords()
	res := &Result{Repo: repo, Commit: commit}
	missing, err := f.classify(ctx, repo, files, res)
	if err != nil {
		return nil, err
	}
	tree, reachable, err := f.listing(ctx, repo, commit, len(missing) > 0)
	if err != nil {
		return nil, err
	}
	missing, releaseBlobs, err := f.flockBlobs(ctx, repo, missing, res)
	if err != nil {
		return nil, err
	}
	defer releaseBlobs()
	if err := f.download(ctx, repo, commit, missing); err != nil {
		return nil, err
	}
	if err := f.link(ctx, repo, commit, res, reachable); err != nil {
		return nil, err
	}
	if tree != nil && treeAgrees(tree, files) {
		_ = f.Cache.WriteTree(repo, commit, tree) // only saves huggingface_hub a request
	}
	f.emit(Event{Kind: EventDone})
	return res, nil
}

// record returns the verified-blob record of the repository folder that
// holds blob path.
func (f *fetchRun) record(blobPath string) *blobRecord {
	dir := filepath.Dir(filepath.Dir(blobPath))
	f.recMu.Lock()
	defer f.recMu.Unlock()
	r := f.records[dir]
	if r == nil {
		r = loadRecord(dir)
		f.records[dir] = r
	}
	return r
}

func (f *fetchRun) saveRecords() {
	f.recMu.Lock()
	defer f.recMu.Unlock()
	for _, r := range f.records {
		r.save()
	}
}

// usable reports whether the blob at path holds pf's bytes: the right
// size, and either drama's record vouches for it unchanged or its digest
// matches now. A blob of the right size that fails the digest is removed
// when it is the repository's own (it is downloaded again); another
// repository's is only passed over.
func (f *fetchRun) usable(ctx context.Context, path string, pf pins.File, own bool) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != pf.Size {
		return false, nil
	}
	rec, name := f.record(path), filepath.Base(path)
	if rec.vouches(name, fi, pf.SHA256) {
		return true, nil
	}
	f.emit(Event{Kind: EventCheck, Path: pf.Path, Size: pf.Size})
	err = checkBlob(ctx, path, pf)
	switch {
	case err == nil:
		rec.add(name, path, pf.SHA256)
		return true, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	case errors.Is(err, ErrMismatch) && f.Offline && own:
		return false, fmt.Errorf("%w in the cache (%s); HF_HUB_OFFLINE is set, so it cannot be downloaded again: unset HF_HUB_OFFLINE and run again", err, path)
	case errors.Is(err, ErrMismatch):
		f.emit(Event{Kind: EventCheck, Path: pf.Path, Size: pf.Size, Error: err.Error() + ": downloading it again"})
		rec.drop(name)
		if own {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, diskError(path, err)
			}
		}
		return false, nil
	}
	return false, nil // unreadable: fetch it
}

// find looks for a usable blob named etag for pf: the repository's own
// first, then the other repositories of the cache.
func (f *fetchRun) find(ctx context.Context, repo, etag string, pf pins.File) (string, error) {
	own := f.Cache.BlobPath(repo, etag)
	if ok, err := f.usable(ctx, own, pf, true); ok || err != nil {
		return own, err
	}
	matches, _ := filepath.Glob(filepath.Join(f.Cache.Dir, "*--*", "blobs", etag))
	for _, m := range matches {
		if m == own {
			continue
		}
		if ok, err := f.usable(ctx, m, pf, false); err != nil {
			return "", err
		} else if ok {
			return m, nil
		}
	}
	return "", nil
}

// classify finds each file's blob in the cache (own or another
// repository's) and returns the ones to download, once per blob: paths
// with the same content share one download.
func (f *fetchRun) classify(ctx context.Context, repo string, files []pins.File, res *Result) ([]Target, error) {
	var missing []Target
	seen := map[string]How{}
	for _, pf := range files {
		name := BlobName(pf)
		final := f.Cache.BlobPath(repo, name)
		r := FileResult{Path: pf.Path, Size: pf.Size, Blob: final, How: HowPresent}
		if how, ok := seen[name]; ok {
			r.How = how
			if how != HowDownloaded {
				f.emit(Event{Kind: EventPresent, Path: pf.Path, Size: pf.Size})
			}
			res.Files = append(res.Files, r)
			continue
		}
		src, err := f.find(ctx, repo, name, pf)
		if err != nil {
			return nil, wrap(err, "%s", pf.Path)
		}
		switch {
		case src == "":
			r.How = HowDownloaded
			missing = append(missing, Target{File: pf, Partial: final + ".drama.incomplete", Final: final})
		case src != final:
			linked, err := linkOrCopy(src, final)
			if err != nil {
				return nil, wrap(err, "%s: share blob from %s", pf.Path, src)
			}
			f.record(final).add(name, final, pf.SHA256)
			r.How = HowShared
			f.emit(Event{Kind: EventShared, Path: pf.Path, Size: pf.Size, Copied: !linked})
		default:
			f.emit(Event{Kind: EventPresent, Path: pf.Path, Size: pf.Size})
		}
		seen[name] = r.How
		res.Files = append(res.Files, r)
	}
	return missing, nil
}

// flockBlobs takes huggingface_hub's own flock for each missing blob
// (.locks/<repo folder>/<etag>.lock), so that a Python download of the
// same blob and drama never write it at once, and drops the targets whose
// blob appeared while waiting. Offline, nothing is taken.
func (f *fetchRun) flockBlobs(ctx context.Context, repo string, missing []Target, res *Result) ([]Target, func(), error) {
	var releases []func()
	releaseAll := func() {
		for _, r := range releases {
			r()
		}
	}
	if f.Offline {
		return missing, releaseAll, nil
	}
	var rest []Target
	for _, t := range missing {
		name := filepath.Base(t.Final)
		r, err := Flock(ctx, f.Cache.flockPath(repo, name+".lock"), f.flockWait())
		if err != nil {
			releaseAll()
			return nil, nil, wrap(err, "%s", t.File.Path)
		}
		releases = append(releases, r)
		ok, err := f.usable(ctx, t.Final, t.File, true)
		if err != nil {
			releaseAll()
			return nil, nil, wrap(err, "%s", t.File.Path)
		}
		if ok {
			res.setHow(BlobName(t.File), HowPresent)
			f.emit(Event{Kind: EventPresent, Path: t.File.Path, Size: t.File.Size})
			continue
		}
		rest = append(rest, t)
	}
	return rest, releaseAll, nil
}

// setHow sets how every file stored in blob name arrived.
func (r *Result) setHow(name string, how How) {
	for i := range r.Files {
		if filepath.Base(r.Files[i].Blob) == name {
			r.Files[i].How = how
		}
	}
}

// download checks offline mode and free space, then runs the downloader.
func (f *fetchRun) download(ctx context.Context, repo, commit string, missing []Target) error {
	if len(missing) == 0 {
		return nil
	}
	if f.Offline {
		names := make([]string, len(missing))
		for i, t := range missing {
			names[i] = t.File.Path
		}
		return fmt.Errorf("%w (HF_HUB_OFFLINE is set): %d files are not in the cache %s: %s; unset HF_HUB_OFFLINE or copy them in",
			ErrOffline, len(missing), f.Cache.Dir, strings.Join(names, ", "))
	}
	if err := checkSpace(filepath.Dir(missing[0].Final), missing); err != nil {
		return err
	}
	d := newDownloader(f.Client, repo, commit, f.Download)
	byPath := make(map[string]Target, len(missing))
	for _, t := range missing {
		byPath[t.File.Path] = t
	}
	// Record each blob as it is verified, so that a fetch that fails later
	// still spares it the hash next time.
	d.event = func(e Event) {
		if e.Kind == EventVerified {
			if t, ok := byPath[e.Path]; ok {
				f.record(t.Final).add(filepath.Base(t.Final), t.Final, t.File.SHA256)
			}
		}
		f.emit(e)
	}
	return d.run(ctx, missing)
}

// checkSpace compares what remains to download with the free space of dir.
func checkSpace(dir string, missing []Target) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return diskError(dir, err)
	}
	var need int64
	for _, t := range missing {
		need += t.File.Size
		// A partial holds its space already, whether it is resumed or
		// started over in place.
		if fi, err := os.Stat(t.Partial); err == nil {
			need -= min(allocatedBytes(fi), t.File.Size)
		}
	}
	free, err := atomicfile.FreeBytes(dir)
	if err != nil {
		return nil // unknown: preallocation will tell
	}
	if free < need {
		return fmt.Errorf("%w on %s: want %d bytes free for what remains, got %d: free some space or point HF_HUB_CACHE elsewhere", ErrNoSpace, dir, need, free)
	}
	return nil
}

// allocatedBytes is the disk space a file holds (its blocks), which is
// less than its size when it is sparse.
func allocatedBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return min(fi.Size(), st.Blocks*512)
	}
	return fi.Size()
}

// listing reads the commit's file listing from the Hub when files are to
// be downloaded or huggingface_hub's cached copy of it (trees/<commit>.json)
// is missing. It is the fetch's first request, so a server that cannot be
// reached at all stops a fetch with work to do at once, with one message,
// and so does a listing past a cap (a server that is no Hub). Any other
// failure only means there is no listing to cache. reachable
// says the server was asked and answered, so the branch refs are worth
// asking for too.
func (f *fetchRun) listing(ctx context.Context, repo, commit string, needed bool) (tree []TreeFile, reachable bool, err error) {
	if f.Offline || f.Client == nil {
		return nil, false, nil
	}
	if _, err := os.Stat(f.Cache.TreePath(repo, commit)); err == nil && !needed {
		return nil, false, nil // nothing to ask: a complete cache costs no request
	}
	tree, err = f.Client.Tree(ctx, repo, commit)
	switch {
	case err == nil:
		return tree, true, nil
	case ctx.Err() != nil:
		return nil, false, ctx.Err()
	case errors.Is(err, ErrUnreachable) && needed, errors.Is(err, ErrTooLarge):
		return nil, false, err
	case errors.Is(err, ErrUnreachable):
		return nil, false, nil
	}
	return nil, true, nil
}

// treeAgrees reports whether a listing holds every pinned file with the
// pinned size and digests, so that caching it cannot contradict the pins.
func treeAgrees(tree []TreeFile, files []pins.File) bool {
	listed := map[string]TreeFile{}
	for _, t := range tree {
		listed[t.Path] = t
	}
	for _, pf := range files {
		t, ok := listed[pf.Path]
		switch {
		case !ok || t.Size != pf.Size || t.LFS != pf.LFS:
			return false
		case t.LFS && t.SHA256 != pf.SHA256:
			return false
		case !t.LFS && pf.GitSHA1 != "" && t.GitOID != pf.GitSHA1:
			return false
		}
	}
	return true
}

// link writes the snapshot links and the refs: drama's own, and any branch
// whose head is this commit (asked only of a server that answered).
func (f *fetchRun) link(ctx context.Context, repo, commit string, res *Result, reachable bool) error {
	f.Cache.writeCacheTag()
	for i, r := range res.Files {
		if err := f.Cache.Link(repo, commit, r.Path, filepath.Base(r.Blob)); err != nil {
			return wrap(err, "link %s", r.Path)
		}
		res.Files[i].Snapshot = f.Cache.SnapshotPath(repo, commit, r.Path)
	}
	if err := f.Cache.WriteRef(repo, PinnedRef, commit); err != nil {
		return wrap(err, "write ref")
	}
	if f.Offline || f.Client == nil || !reachable {
		return nil
	}
	if refs, err := f.Client.Refs(ctx, repo); err == nil {
		for name, c := range refs {
			if c == commit && pins.ValidPath(name) {
				_ = f.Cache.WriteRef(repo, name, commit)
			}
		}
	}
	return nil
}
