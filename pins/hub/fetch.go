package hub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drama-tts/drama/pins"
)

// PinnedRef is the ref drama writes in the cache for the commit it
// fetched, so huggingface_hub finds it offline by that name too and
// "hf cache prune" keeps it.
const PinnedRef = "drama-pinned"

// Fetcher puts a pinned commit's files into a Hugging Face cache.
type Fetcher struct {
	Client  *Client // nil or unused when Offline
	Cache   Cache
	Offline bool // HF_HUB_OFFLINE: no network; everything must be present
	// Downloader settings; Client, Repo and Commit are filled in.
	Download Downloader
	LockWait time.Duration // bound on waiting for another fetch (default 1 min)
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
// snapshots/<commit>, then writes the refs. files must carry digests.
func (f *Fetcher) Fetch(ctx context.Context, repo, commit string, files []pins.File) (*Result, error) {
	if !pins.IsCommit(commit) {
		return nil, fmt.Errorf("fetch: revision %q: want a full 40-hex commit", commit)
	}
	for _, pf := range files {
		if BlobName(pf) == "" {
			return nil, fmt.Errorf("fetch: %s: the pin has no digest: run drama pins lock first", pf.Path)
		}
	}
	unlock, err := Lock(ctx, f.Cache.lockPath(repo, "drama-fetch.lock"), orDefault(f.LockWait, time.Minute))
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	defer unlock()
	res := &Result{Repo: repo, Commit: commit}
	missing, err := f.classify(repo, files, res)
	if err != nil {
		return nil, err
	}
	missing, unlockBlobs, err := f.lockBlobs(ctx, repo, missing, res)
	if err != nil {
		return nil, err
	}
	defer unlockBlobs()
	if err := f.download(ctx, repo, commit, missing); err != nil {
		return nil, err
	}
	if err := f.link(ctx, repo, commit, res); err != nil {
		return nil, err
	}
	f.Download.emit(Event{Kind: EventDone})
	return res, nil
}

// classify finds each file's blob in the cache (own or another
// repository's) and returns the ones to download.
func (f *Fetcher) classify(repo string, files []pins.File, res *Result) ([]Target, error) {
	var missing []Target
	for _, pf := range files {
		name := BlobName(pf)
		final := f.Cache.BlobPath(repo, name)
		r := FileResult{Path: pf.Path, Size: pf.Size, Blob: final, How: HowPresent}
		if src, ok := f.Cache.FindBlob(repo, name, pf.Size); ok && src != final {
			linked, err := linkOrCopy(src, final)
			if err != nil {
				return nil, fmt.Errorf("fetch: %s: share blob from %s: %w", pf.Path, src, err)
			}
			r.How = HowShared
			f.Download.emit(Event{Kind: EventShared, Path: pf.Path, Size: pf.Size, Copied: !linked})
		} else if !ok {
			r.How = HowDownloaded
			missing = append(missing, Target{File: pf, Partial: final + ".drama.incomplete", Final: final})
		} else {
			f.Download.emit(Event{Kind: EventPresent, Path: pf.Path, Size: pf.Size})
		}
		res.Files = append(res.Files, r)
	}
	return missing, nil
}

// lockBlobs takes huggingface_hub's own lock for each missing blob
// (.locks/<repo folder>/<etag>.lock, flock), so that a Python download of
// the same blob and drama never write it at once, and drops the targets
// whose blob appeared while waiting. Offline, nothing is locked.
func (f *Fetcher) lockBlobs(ctx context.Context, repo string, missing []Target, res *Result) ([]Target, func(), error) {
	var unlocks []func()
	unlockAll := func() {
		for _, u := range unlocks {
			u()
		}
	}
	if f.Offline {
		return missing, unlockAll, nil
	}
	var rest []Target
	for _, t := range missing {
		name := filepath.Base(t.Final)
		u, err := Lock(ctx, f.Cache.lockPath(repo, name+".lock"), orDefault(f.LockWait, time.Minute))
		if err != nil {
			unlockAll()
			return nil, nil, fmt.Errorf("fetch: %s: %w", t.File.Path, err)
		}
		unlocks = append(unlocks, u)
		if blobOK(t.Final, t.File.Size) {
			res.setHow(t.File.Path, HowPresent)
			f.Download.emit(Event{Kind: EventPresent, Path: t.File.Path, Size: t.File.Size})
			continue
		}
		rest = append(rest, t)
	}
	return rest, unlockAll, nil
}

func (r *Result) setHow(path string, how How) {
	for i := range r.Files {
		if r.Files[i].Path == path {
			r.Files[i].How = how
		}
	}
}

// download checks offline mode and free space, then runs the downloader.
func (f *Fetcher) download(ctx context.Context, repo, commit string, missing []Target) error {
	if len(missing) == 0 {
		return nil
	}
	if f.Offline {
		names := make([]string, len(missing))
		for i, t := range missing {
			names[i] = t.File.Path
		}
		return fmt.Errorf("fetch: %w (HF_HUB_OFFLINE is set): %d files are not in the cache %s: %s; unset HF_HUB_OFFLINE or copy them in",
			ErrOffline, len(missing), f.Cache.Dir, strings.Join(names, ", "))
	}
	if err := checkSpace(filepath.Dir(missing[0].Final), missing); err != nil {
		return err
	}
	d := f.Download
	d.Client, d.Repo, d.Commit = f.Client, repo, commit
	return d.Run(ctx, missing)
}

// checkSpace compares what remains to download with the free space of dir.
func checkSpace(dir string, missing []Target) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return diskError(dir, err)
	}
	var need int64
	for _, t := range missing {
		need += t.File.Size
		if fi, err := os.Stat(t.Partial); err == nil && loadState(t.Partial+".state", t.File.Path, t.File.Size) != nil {
			need -= min(fi.Size(), t.File.Size) // preallocated already
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // unknown: preallocation will tell
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < need {
		return fmt.Errorf("fetch: %w on %s: want %d bytes free for what remains, got %d: free some space or point HF_HUB_CACHE elsewhere", ErrNoSpace, dir, need, free)
	}
	return nil
}

// link writes the snapshot links and the refs: drama's own, and any branch
// whose head is this commit.
func (f *Fetcher) link(ctx context.Context, repo, commit string, res *Result) error {
	f.Cache.writeCacheTag()
	for i, r := range res.Files {
		if err := f.Cache.Link(repo, commit, r.Path, filepath.Base(r.Blob)); err != nil {
			return fmt.Errorf("fetch: link %s: %w", r.Path, err)
		}
		res.Files[i].Snapshot = f.Cache.SnapshotPath(repo, commit, r.Path)
	}
	if err := f.Cache.WriteRef(repo, PinnedRef, commit); err != nil {
		return fmt.Errorf("fetch: write ref: %w", err)
	}
	if f.Offline || f.Client == nil {
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
