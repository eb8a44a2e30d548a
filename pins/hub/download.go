package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/drama-tts/drama/pins"
)

// Defaults of DownloadOptions.
const (
	DefaultWorkers     = 8
	DefaultChunkSize   = 16 << 20
	DefaultIdleTimeout = 20 * time.Second
	DefaultMaxAttempts = 10
)

// Target is one file to download: its pin, and where its partial and
// final blob go.
type Target struct {
	File    pins.File
	Partial string // the growing file; its resume sidecar is Partial+".state"
	Final   string // the verified blob
}

// DownloadOptions say how a fetch downloads; the zero value takes every
// default. Fetch reads them and never changes them.
type DownloadOptions struct {
	// Workers is the most parallel streams over all files (default
	// DefaultWorkers); past DefaultWorkers they are added only while they
	// raise the measured rate (docs/fetch.md says how).
	Workers     int
	ChunkSize   int64         // bytes per ranged GET (default DefaultChunkSize)
	IdleTimeout time.Duration // a stream with no bytes for this long is re-issued
	MaxAttempts int           // tries per chunk before giving up
	// Progress, if set, is called with each file's newly written bytes (a
	// negative count when a file starts over).
	Progress func(path string, delta int64)
	// Event, if set, gets file events; it must be safe for concurrent use.
	Event func(Event)
	// SplitAfter and SplitMin govern straggler splitting: an idle worker
	// takes the upper half of what remains of a stream that has run for
	// SplitAfter, when at least 2*SplitMin bytes remain. A negative
	// SplitMin turns splitting off.
	SplitAfter time.Duration
	SplitMin   int64
}

// downloader fetches files of one commit by parallel ranged GETs into
// preallocated partial files, hashing each file's contiguous prefix as it
// fills, and renames a file to its final name only after its size and
// digest match. A fetch makes one for its run.
type downloader struct {
	client       *Client
	repo, commit string
	// The options with their defaults resolved.
	workers    int
	chunkSize  int64
	idle       time.Duration
	attempts   int
	splitAfter time.Duration
	splitMin   int64 // 0: no splitting
	progress   func(path string, delta int64)
	// event gets the file events: the fetch's bookkeeping, then the
	// options' Event.
	event func(Event)
}

// newDownloader makes the downloader of one commit, resolving o's
// defaults once.
func newDownloader(c *Client, repo, commit string, o DownloadOptions) *downloader {
	d := &downloader{client: c, repo: repo, commit: commit,
		workers: orDefault(o.Workers, DefaultWorkers), chunkSize: orDefault(o.ChunkSize, DefaultChunkSize),
		idle: orDefault(o.IdleTimeout, DefaultIdleTimeout), attempts: orDefault(o.MaxAttempts, DefaultMaxAttempts),
		splitAfter: orDefault(o.SplitAfter, DefaultSplitAfter), splitMin: orDefault(o.SplitMin, DefaultSplitMin),
		progress: o.Progress, event: o.Event}
	if o.SplitMin < 0 {
		d.splitMin = 0
	}
	return d
}

// EventKind names a fetch event.
type EventKind string

// The fetch events.
const (
	EventPlan     EventKind = "plan"     // a file will be downloaded (Bytes already on disk)
	EventPresent  EventKind = "present"  // a file is already in the cache
	EventShared   EventKind = "shared"   // a file was linked or copied from another repository's blob
	EventStart    EventKind = "start"    // the first byte of a file was asked for
	EventRetry    EventKind = "retry"    // a chunk failed and will be retried
	EventRestart  EventKind = "restart"  // a file's digest did not match; it is downloaded again
	EventVerified EventKind = "verified" // a file matched its pin and got its final name
	EventWorkers  EventKind = "workers"  // the number of active streams changed
	EventSplit    EventKind = "split"    // an idle stream took half of a straggler's range
	EventDone     EventKind = "done"     // the fetch ended
	// EventCheck: a blob in the cache that drama's record does not vouch
	// for is being hashed before use; with Error, it failed and is
	// downloaded again.
	EventCheck EventKind = "check"
)

// Event is one step of a fetch, for progress displays and NDJSON logs.
type Event struct {
	Kind    EventKind `json:"event"`
	Path    string    `json:"path,omitempty"`
	Size    int64     `json:"size,omitempty"`
	Bytes   int64     `json:"bytes,omitempty"`
	Workers int       `json:"workers,omitempty"`
	Error   string    `json:"error,omitempty"`
	// Copied marks a shared file that was copied, not hard-linked (another
	// filesystem).
	Copied bool `json:"copied,omitempty"`
	// VerifyLag is the time from a file's last byte to its verified rename.
	VerifyLag time.Duration `json:"verify_lag_ns,omitempty"`
}

func (d *downloader) emit(e Event) {
	if d.event != nil {
		d.event(e)
	}
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// run downloads targets and returns when all are verified, one fails for
// good, or ctx ends. Partial files and their sidecars stay for a later run.
func (d *downloader) run(ctx context.Context, targets []Target) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := newQueue(d.workers, len(targets), d.chunkSize)
	q.splitAfter, q.splitMin = d.splitAfter, d.splitMin
	stopTick := q.tick(min(q.splitAfter/4, 250*time.Millisecond))
	defer stopTick()
	stopRamp := q.rampLoop(func(n int) { d.emit(Event{Kind: EventWorkers, Workers: n}) })
	defer stopRamp()
	stop := context.AfterFunc(ctx, func() { q.fail(ctx.Err()) })
	defer stop()
	var jobs []*job
	for _, t := range targets {
		j, err := d.open(t)
		if err != nil {
			q.fail(err)
			break
		}
		jobs = append(jobs, j)
		d.emit(Event{Kind: EventPlan, Path: t.File.Path, Size: t.File.Size, Bytes: j.haveBytes()})
		if tasks := j.pending(); len(tasks) > 0 {
			q.push(tasks...)
		} else if err := d.advanceHash(q, j); err != nil { // complete already: verify, ask nothing
			q.fail(err)
		}
	}
	var wg sync.WaitGroup
	for i := range d.workers {
		wg.Go(func() { d.work(ctx, q, i) })
	}
	wg.Wait()
	err := q.result()
	for _, j := range jobs {
		j.close()
		if err != nil {
			j.dropIfEmpty()
		}
	}
	return err
}

func (d *downloader) work(ctx context.Context, q *queue, id int) {
	for {
		s, ok := q.take(id)
		if !ok {
			return
		}
		if s.stolen {
			off, end := s.bounds()
			d.emit(Event{Kind: EventSplit, Path: s.j.t.File.Path, Bytes: end - off + 1})
		}
		if err := d.fetchSpan(ctx, q, s); err != nil {
			q.fail(err)
			return
		}
	}
}

// job is one file being downloaded.
type job struct {
	t     Target
	f     *os.File
	sf    *stateFile // the open resume sidecar
	chunk int64
	n     int // chunks

	mu       sync.Mutex
	done     []byte // bitmap
	hashed   int64
	hashing  bool
	hstate   [2][]byte // marshalled digests at hashed
	dig      *digester // touched only by the goroutine that set hashing
	wb       *writeback
	restarts int
	started  bool
	lastByte time.Time

	metaMu sync.Mutex
	meta   *FileMeta

	// hashedChunks is the number of chunks in the hashed prefix, read by
	// the queue without j.mu to keep downloads near the hash.
	hashedChunks atomic.Int64
}

type task struct {
	j   *job
	idx int
}

// open prepares a target's partial file, resuming from its sidecar when the
// two agree, else starting over with a preallocated file.
func (d *downloader) open(t Target) (*job, error) {
	if err := os.MkdirAll(filepath.Dir(t.Partial), 0o755); err != nil {
		return nil, diskError(t.Partial, err)
	}
	f, err := os.OpenFile(t.Partial, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, diskError(t.Partial, err)
	}
	j := &job{t: t, f: f, dig: newDigester(t.File), wb: newWriteback(f)}
	fi, err := f.Stat()
	if err != nil {
		j.close()
		return nil, diskError(t.Partial, err)
	}
	_ = os.Remove(j.statePath() + ".tmp") // left by an older drama
	st := loadState(j.statePath(), t.File.Path, t.File.Size)
	if j.sf, err = openStateFile(j.statePath()); err != nil {
		j.close()
		return nil, diskError(j.statePath(), err)
	}
	if st != nil && fi.Size() == t.File.Size && j.resume(st) {
		return j, nil
	}
	j.chunk = d.chunkSize
	j.n = numChunks(t.File.Size, j.chunk)
	j.done = make([]byte, (j.n+7)/8)
	j.hashed, j.hstate = 0, [2][]byte{}
	j.dig = newDigester(t.File)
	// The sidecar first, then the space for the data: once both are held,
	// no later write of this file needs more.
	j.mu.Lock()
	err = j.saveLocked()
	j.mu.Unlock()
	if err != nil {
		j.close()
		return nil, err
	}
	if err := preallocate(f, t.File.Size); err != nil {
		j.close()
		return nil, diskError(t.Partial, err)
	}
	return j, nil
}

func (j *job) statePath() string { return j.t.Partial + ".state" }

// resume adopts a sidecar's chunks and hash state.
func (j *job) resume(st *partState) bool {
	j.chunk, j.n, j.done, j.hashed = st.Chunk, numChunks(st.Size, st.Chunk), st.Done, st.Hashed
	if st.Hashed > 0 && j.dig.unmarshal(st.SHA256, st.GitSHA1) != nil {
		return false
	}
	j.hstate = [2][]byte{st.SHA256, st.GitSHA1}
	j.hashedChunks.Store(int64(numChunks(st.Hashed, st.Chunk)))
	return true
}

// preallocate reserves size bytes so that a full disk shows up now, not
// mid-download; it falls back to a sparse truncate where fallocate is not
// supported.
func preallocate(f *os.File, size int64) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	err := allocate(f, size)
	if err == nil || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return err
	}
	return f.Truncate(size)
}

func (j *job) haveBytes() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	var n int64
	for i := range j.n {
		if bit(j.done, i) {
			n += j.chunkLen(i)
		}
	}
	return n
}

func (j *job) chunkLen(i int) int64 {
	return min(j.chunk, j.t.File.Size-int64(i)*j.chunk)
}

func (j *job) pending() []task {
	j.mu.Lock()
	defer j.mu.Unlock()
	var ts []task
	for i := range j.n {
		if !bit(j.done, i) {
			ts = append(ts, task{j, i})
		}
	}
	return ts
}

// dropIfEmpty removes the partial file and its sidecar when no chunk of
// it is on disk: a failed fetch then leaves no preallocated file that
// holds nothing (say, one whose pin the HEAD refused), while any partial
// with bytes stays for resume.
func (j *job) dropIfEmpty() {
	if j.haveBytes() > 0 {
		return
	}
	_ = os.Remove(j.statePath())
	_ = os.Remove(j.t.Partial)
}

func (j *job) close() {
	j.wb.stop()
	if j.f != nil {
		j.f.Close()
	}
	j.sf.close()
}

// saveLocked writes the sidecar; j.mu is held.
func (j *job) saveLocked() error {
	st := partState{Version: stateVersion, Path: j.t.File.Path, Size: j.t.File.Size, Chunk: j.chunk,
		Done: j.done, Hashed: j.hashed, SHA256: j.hstate[0], GitSHA1: j.hstate[1]}
	if err := j.sf.save(&st); err != nil {
		return diskError(j.statePath(), err)
	}
	return nil
}

// diskErr marks a local write failure: fatal, not retried.
type diskErr struct {
	path string
	err  error
}

// Error says what failed to write and, for a full disk, what to do.
func (e *diskErr) Error() string {
	if errors.Is(e.err, syscall.ENOSPC) || errors.Is(e.err, syscall.EDQUOT) {
		return fmt.Sprintf("write %s: %v: free some space and run again; the partial files stay for resume", e.path, e.err)
	}
	return fmt.Sprintf("write %s: %v", e.path, e.err)
}

// Unwrap gives the OS error and, for a full disk, ErrNoSpace.
func (e *diskErr) Unwrap() []error {
	if errors.Is(e.err, syscall.ENOSPC) || errors.Is(e.err, syscall.EDQUOT) {
		return []error{e.err, ErrNoSpace}
	}
	return []error{e.err}
}

func diskError(path string, err error) error { return &diskErr{path, err} }
