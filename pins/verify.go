package pins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/drama-tts/drama/internal/filehash"
)

// Level is how thoroughly Verify checks a file.
type Level string

// The verification levels.
const (
	LevelSize   Level = "size"   // the file exists with the pinned size
	LevelSHA256 Level = "sha256" // every byte read and hashed
)

// ParseLevel parses a level name.
func ParseLevel(s string) (Level, error) {
	switch Level(s) {
	case LevelSize, LevelSHA256:
		return Level(s), nil
	}
	return "", fmt.Errorf("unknown level %q: want size or sha256", s)
}

// Status is the outcome of checking one pinned file.
type Status string

// The statuses of a checked file.
const (
	StatusOK             Status = "ok"
	StatusMissing        Status = "missing"
	StatusSizeMismatch   Status = "size_mismatch"
	StatusSHA256Mismatch Status = "sha256_mismatch"
	StatusUnreadable     Status = "unreadable"
)

// Result is what Verify found for one pinned file.
type Result struct {
	Path   string `json:"path"`
	Status Status `json:"status"`
	// Verified is the level an ok file is known to match at: sha256 when
	// it was hashed now or the verified-state record vouches for it.
	Verified   Level  `json:"verified,omitempty"`
	FromRecord bool   `json:"from_record,omitempty"`
	WantSize   int64  `json:"want_size"`
	GotSize    int64  `json:"got_size"`
	WantSHA256 string `json:"want_sha256"`
	GotSHA256  string `json:"got_sha256,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Report is the outcome of Verify.
type Report struct {
	Variant     string   `json:"variant"`
	Dir         string   `json:"dir"`
	Level       Level    `json:"level"`
	Files       []Result `json:"files"`
	Extra       []string `json:"extra"`
	HashedBytes int64    `json:"hashed_bytes"`
	// RecordError says why the verified-state record could not be saved.
	RecordError string `json:"record_error,omitempty"`
}

// Count returns how many files have the given status.
func (r *Report) Count(s Status) int {
	n := 0
	for _, f := range r.Files {
		if f.Status == s {
			n++
		}
	}
	return n
}

// OK reports whether every pinned file matched.
func (r *Report) OK() bool { return r.Count(StatusOK) == len(r.Files) }

// Mismatched reports whether any file is missing or differs from its pin.
func (r *Report) Mismatched() bool {
	return r.Count(StatusMissing)+r.Count(StatusSizeMismatch)+r.Count(StatusSHA256Mismatch) > 0
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	Level    Level
	Workers  int              // files hashed at once; 0 means GOMAXPROCS (one per CPU)
	Progress func(done int64) // bytes hashed since the last call; may be nil
	NoRecord bool             // neither read nor write the verified-state record
	// TrustRecord, with LevelSHA256, hashes only the files the
	// verified-state record does not vouch for (each unchanged in size,
	// mtime, inode and device since it was hashed); the others are
	// reported sha256-verified from the record.
	TrustRecord bool
}

// ErrNoDir is returned when the directory to verify does not exist.
var ErrNoDir = errors.New("directory does not exist")

// Verify checks every file of p under dir. It returns an error only when it
// cannot check at all (incomplete pins: ErrIncomplete; no directory: ErrNoDir;
// cancelled); per-file problems are in the report. The errors say what is
// wrong, and the caller adds what to do.
func Verify(ctx context.Context, dir string, p *Pins, opt VerifyOptions) (*Report, error) {
	if !p.Complete() {
		return nil, fmt.Errorf("pins: variant %s: %w: the digests of %s@%s are not filled in",
			p.Variant, ErrIncomplete, p.Repo, short(p.Revision))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("pins: %s: %w", dir, ErrNoDir)
	}
	if opt.Level == "" {
		opt.Level = LevelSize
	}
	rep := &Report{Variant: p.Variant, Dir: dir, Level: opt.Level, Files: make([]Result, len(p.Files))}
	state := &verifiedState{Entries: map[string]stateEntry{}}
	statePath := filepath.Join(dir, StateDirName, StateFileName)
	if !opt.NoRecord {
		state = loadState(statePath)
	}
	v := &verifier{dir: dir, opt: opt, state: state}
	if err := v.run(ctx, p.Files, rep); err != nil {
		return nil, err
	}
	if opt.Level == LevelSHA256 && !opt.NoRecord {
		if err := state.save(statePath); err != nil {
			rep.RecordError = err.Error()
		}
	}
	extra, err := extraFiles(dir, p)
	if err != nil {
		return nil, err
	}
	rep.Extra = extra
	return rep, nil
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

type verifier struct {
	dir    string
	opt    VerifyOptions
	state  *verifiedState
	hashed atomic.Int64
}

type hashJob struct {
	index int
	id    fileIdentity
}

// run checks sizes at once, then hashes what needs hashing on a pool of
// workers, largest files first so the pool stays busy to the end.
func (v *verifier) run(ctx context.Context, files []File, rep *Report) error {
	var jobs []hashJob
	for i, f := range files {
		res, id, needHash := v.checkSize(f)
		rep.Files[i] = res
		if needHash {
			jobs = append(jobs, hashJob{index: i, id: id})
		}
	}
	sort.SliceStable(jobs, func(a, b int) bool { return files[jobs[a].index].Size > files[jobs[b].index].Size })
	if err := v.hashAll(ctx, files, jobs, rep); err != nil {
		return err
	}
	rep.HashedBytes = v.hashed.Load()
	return nil
}

// checkSize stats one file and decides whether it must be hashed.
func (v *verifier) checkSize(f File) (Result, fileIdentity, bool) {
	res := Result{Path: f.Path, WantSize: f.Size, WantSHA256: f.SHA256}
	fi, err := os.Stat(filepath.Join(v.dir, filepath.FromSlash(f.Path)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Status = StatusMissing
		return res, fileIdentity{}, false
	case err != nil:
		res.Status, res.Error = StatusUnreadable, err.Error()
		return res, fileIdentity{}, false
	case !fi.Mode().IsRegular():
		res.Status, res.Error = StatusUnreadable, "not a regular file"
		return res, fileIdentity{}, false
	}
	res.GotSize = fi.Size()
	id := identityOf(fi)
	if fi.Size() != f.Size {
		res.Status = StatusSizeMismatch
		v.state.drop(f.Path)
		return res, id, false
	}
	sum, vouched := v.state.lookup(f.Path, id)
	vouched = vouched && sum == f.SHA256
	if v.opt.Level == LevelSHA256 && !(v.opt.TrustRecord && vouched) {
		return res, id, true
	}
	res.Status, res.Verified = StatusOK, LevelSize
	if vouched {
		res.Verified, res.FromRecord, res.GotSHA256 = LevelSHA256, true, sum
	}
	return res, id, false
}

func (v *verifier) hashAll(ctx context.Context, files []File, jobs []hashJob, rep *Report) error {
	workers := v.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ch := make(chan hashJob)
	var wg sync.WaitGroup
	for range min(workers, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				rep.Files[j.index] = v.hashOne(ctx, files[j.index], j.id, rep.Files[j.index])
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		ch <- j
	}
	close(ch)
	wg.Wait()
	return ctx.Err()
}

func (v *verifier) hashOne(ctx context.Context, f File, id fileIdentity, res Result) Result {
	progress := func(n int64) {
		v.hashed.Add(n)
		if v.opt.Progress != nil {
			v.opt.Progress(n)
		}
	}
	sum, n, err := filehash.SHA256(ctx, filepath.Join(v.dir, filepath.FromSlash(f.Path)), progress)
	switch {
	case err != nil:
		res.Status, res.Error = StatusUnreadable, err.Error()
		v.state.drop(f.Path)
	case n != f.Size:
		res.Status, res.GotSize = StatusSizeMismatch, n
		v.state.drop(f.Path)
	case sum != f.SHA256:
		res.Status, res.GotSHA256 = StatusSHA256Mismatch, sum
		v.state.drop(f.Path)
	default:
		res.Status, res.Verified, res.GotSHA256 = StatusOK, LevelSHA256, sum
		v.state.set(f.Path, id, sum)
	}
	return res
}

// extraFiles lists the files under dir that p does not pin, skipping
// drama's state folder and the lock file. Unreadable parts are skipped:
// they are reported per pinned file.
func extraFiles(dir string, p *Pins) ([]string, error) {
	pinned := make(map[string]bool, len(p.Files))
	for _, f := range p.Files {
		pinned[f.Path] = true
	}
	extra := []string{}
	err := eachFile(dir, true, func(rel, _ string) {
		if !pinned[rel] {
			extra = append(extra, rel)
		}
	})
	return extra, err
}

// VerifyBeforeUse checks dir against p at level before its files are used
// (drama serve before the engine starts). At LevelSHA256 a size check
// comes first: it knows, from the verified-state record, the files whose
// sha256 matched at a full check and that have not changed since (same
// size, mtime and inode); only the others are hashed, and none when a size
// already mismatches. hashing, when set, is told the bytes about to be
// hashed and returns the callback for their progress and the one for
// their end.
func VerifyBeforeUse(ctx context.Context, dir string, p *Pins, level Level, hashing func(total int64) (progress func(int64), done func())) (*Report, error) {
	rep, err := Verify(ctx, dir, p, VerifyOptions{Level: LevelSize})
	if err != nil || level != LevelSHA256 || rep.Mismatched() {
		return rep, err
	}
	sub := *p
	sub.Files = nil
	for _, r := range rep.Files {
		if file, ok := p.Lookup(r.Path); ok && r.Status == StatusOK && !r.FromRecord {
			sub.Files = append(sub.Files, file)
		}
	}
	if len(sub.Files) == 0 {
		return rep, nil
	}
	var progress func(int64)
	done := func() {}
	if hashing != nil {
		progress, done = hashing(sub.TotalBytes())
	}
	hashed, err := Verify(ctx, dir, &sub, VerifyOptions{Level: LevelSHA256, Progress: progress})
	done()
	if err != nil {
		return nil, err
	}
	byPath := map[string]Result{}
	for _, r := range hashed.Files {
		byPath[r.Path] = r
	}
	for i, r := range rep.Files {
		if h, ok := byPath[r.Path]; ok {
			rep.Files[i] = h
		}
	}
	rep.RecordError = hashed.RecordError
	return rep, nil
}
