package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drama-tts/drama/internal/wait"
)

// errStalled is a stream that sent nothing for the idle timeout.
var errStalled = errors.New("stream stalled")

// errShortAnswer is a 206 that held less than the range asked for, all of
// it written: not a failure, the rest is asked for at once.
var errShortAnswer = errors.New("the server sent part of the range")

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// fetchSpan downloads one span of a chunk, retrying transient failures;
// a partly received span resumes from its last byte. When the chunk's last
// span is done the chunk is. It returns only fatal errors.
func (d *downloader) fetchSpan(ctx context.Context, q *queue, s *span) error {
	j := s.j
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		meta, err := d.metaFor(ctx, j)
		if err != nil {
			return err // the HEAD had its own retries
		}
		n, err := d.stream(ctx, q, s, meta.URL)
		if errors.Is(err, errShortAnswer) && n > 0 {
			attempt, waited = -1, 0 // progress, and no fault: ask for the rest now
			continue
		}
		if err == nil {
			if n, raised := q.success(); raised {
				d.emit(Event{Kind: EventWorkers, Workers: n})
			}
			q.finished(s)
			if s.parts.Add(-1) > 0 {
				return nil
			}
			return d.chunkDone(q, j, s.idx)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		off, last := s.bounds()
		if fatal(err) {
			return wrap(err, "%s: bytes %d-%d", j.t.File.Path, off, last)
		}
		if n > 0 {
			attempt, waited = 0, 0 // progress: the stream was alive
		}
		// A server that takes no connection at all gets the HEAD's number
		// of tries, not the data's: it will not come back in a minute.
		limit := d.attempts
		if n == 0 && isDial(err) {
			limit = min(limit, d.client.Retries+1)
		}
		if attempt+1 >= limit {
			if isNetwork(err) {
				err = &NetError{Host: origin(meta.URL), What: fmt.Sprintf("GET %s bytes %d-%d", j.t.File.Path, off, last), Attempts: attempt + 1, Waited: waited, Err: err}
				return wrap(err, "%s", j.t.File.Path)
			}
			return wrap(err, "%s: bytes %d-%d: gave up after %d attempts", j.t.File.Path, off, last, limit)
		}
		delay := d.client.delay(attempt, err)
		d.afterFailure(q, j, meta, Retry{What: j.t.File.Path, N: attempt + 1, Of: limit - 1, Delay: delay, Err: err})
		if err := wait.Sleep(ctx, delay); err != nil {
			return err
		}
		waited += delay
	}
}

// afterFailure records a transient failure: an expired URL or a 416 asks
// for a fresh HEAD; repeated failures lower the number of streams.
func (d *downloader) afterFailure(q *queue, j *job, meta FileMeta, r Retry) {
	var se *StatusError
	if err := r.Err; errors.Is(err, ErrExpired) || (errors.As(err, &se) && se.Status == http.StatusRequestedRangeNotSatisfiable) {
		j.invalidate(meta.URL)
	}
	d.emit(Event{Kind: EventRetry, Path: j.t.File.Path, Error: r.Message()})
	if n, changed := q.failure(); changed {
		d.emit(Event{Kind: EventWorkers, Workers: n})
	}
}

// fatal reports whether a chunk error ends the fetch.
func fatal(err error) bool {
	var de *diskErr
	if errors.As(err, &de) || errors.Is(err, ErrMismatch) || errors.Is(err, ErrNotHub) {
		return true
	}
	var se *StatusError
	if errors.As(err, &se) {
		return !retryable(se.Status) && !errors.Is(err, ErrExpired) && se.Status != http.StatusRequestedRangeNotSatisfiable
	}
	return false
}

// metaFor returns the file's HEAD answer, asking once per file (and again
// after invalidate), and checks it against the pin.
func (d *downloader) metaFor(ctx context.Context, j *job) (FileMeta, error) {
	j.metaMu.Lock()
	defer j.metaMu.Unlock()
	if j.meta != nil {
		return *j.meta, nil
	}
	f := j.t.File
	m, err := d.client.Head(ctx, d.repo, d.commit, f.Path)
	if err != nil {
		return m, err
	}
	switch {
	case m.Commit != d.commit:
		return m, fmt.Errorf("%w: %s: X-Repo-Commit: want %s, got %s", ErrMismatch, f.Path, d.commit, m.Commit)
	case m.Size >= 0 && m.Size != f.Size:
		return m, fmt.Errorf("%w: %s: size: want %d, got %d", ErrMismatch, f.Path, f.Size, m.Size)
	case m.LFS && m.ETag != f.SHA256:
		return m, fmt.Errorf("%w: %s: X-Linked-Etag (sha256): want %s, got %s", ErrMismatch, f.Path, f.SHA256, m.ETag)
	case !m.LFS && f.GitSHA1 != "" && m.ETag != "" && m.ETag != f.GitSHA1:
		return m, fmt.Errorf("%w: %s: ETag (git blob sha1): want %s, got %s", ErrMismatch, f.Path, f.GitSHA1, m.ETag)
	}
	j.meta = &m
	if !j.started {
		j.started = true
		d.emit(Event{Kind: EventStart, Path: f.Path, Size: f.Size})
	}
	return m, nil
}

// invalidate drops the cached HEAD answer if it is still url.
func (j *job) invalidate(url string) {
	j.metaMu.Lock()
	defer j.metaMu.Unlock()
	if j.meta != nil && j.meta.URL == url {
		j.meta = nil
	}
}

// stream GETs what remains of a span and writes it in place, returning
// how many bytes it wrote. It stops early, without error, when a split
// has taken the rest. A stream idle for the idle timeout is cut.
func (d *downloader) stream(ctx context.Context, q *queue, s *span, url string) (int64, error) {
	first, last := s.bounds()
	if first > last {
		return 0, nil
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var idled atomic.Bool
	timer := time.AfterFunc(d.idle, func() { idled.Store(true); cancel() })
	defer timer.Stop()
	j := s.j
	body, err := d.client.GetRange(rctx, d.repo, url, first, last, j.t.File.Size)
	if err != nil {
		return 0, stallErr(err, idled.Load())
	}
	defer body.Close()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	if body.Whole {
		return d.streamWhole(q, s, body, *bp, func() { timer.Reset(d.idle) }, idled.Load)
	}
	// An answer that starts before the range: drop the bytes before it.
	if skip := first - body.First; skip > 0 {
		n, err := io.CopyBuffer(io.Discard, io.LimitReader(body, skip), *bp)
		if err != nil {
			return 0, stallErr(err, idled.Load())
		}
		if n < skip {
			return 0, fmt.Errorf("%w: body ended at byte %d, before byte %d asked for", ErrBadResponse, body.First+n, first)
		}
	}
	var wrote int64
	for {
		off, end := s.bounds()
		if off > end {
			return wrote, nil // done, or the rest was split off
		}
		if off > body.Last {
			return wrote, errShortAnswer // the server sent less: ask for the rest
		}
		n, rerr := body.Read((*bp)[:min(int64(len(*bp)), end-off+1, body.Last-off+1)])
		if n > 0 {
			timer.Reset(d.idle)
			m, werr := d.land(q, s, (*bp)[:n])
			wrote += int64(m)
			if werr != nil {
				return wrote, werr
			}
		}
		if rerr != nil {
			if off, end := s.bounds(); off > end {
				return wrote, nil
			}
			if off, _ := s.bounds(); rerr == io.EOF && off > body.Last {
				return wrote, errShortAnswer
			}
			if rerr == io.EOF {
				return wrote, fmt.Errorf("%w: body ended at byte %d of %d-%d", ErrBadResponse, off, first, last)
			}
			return wrote, stallErr(rerr, idled.Load())
		}
	}
}

// streamWhole takes a 200, the whole file from byte 0, sent for a ranged
// request by a server that ignores Range (HTTP allows it). Besides the
// span's own bytes it writes every chunk of the file still queued, which
// it takes from the queue, so such a server costs one pass over the file
// rather than one per chunk; the bytes nobody needs are read and dropped.
// Chunks it took but did not finish go back to the queue.
func (d *downloader) streamWhole(q *queue, s *span, body io.Reader, buf []byte, alive func(), idled func() bool) (int64, error) {
	j := s.j
	claimed := q.claim(j) // ascending chunk indexes
	next := 0             // claimed[next] is the first claimed chunk not finished
	defer func() {
		var back []task
		for _, idx := range claimed[next:] {
			back = append(back, task{j, idx})
		}
		if len(back) > 0 {
			q.push(back...)
		}
	}()
	var pos, wrote int64
	for {
		kind, limit, err := wholeRegion(s, pos, claimed, next)
		if kind == regionNone {
			return wrote, err
		}
		n, rerr := body.Read(buf[:min(int64(len(buf)), limit)])
		if n > 0 {
			alive()
			switch kind {
			case regionOwn:
				m, werr := d.land(q, s, buf[:n])
				wrote += int64(m)
				if werr != nil {
					return wrote, werr
				}
			case regionClaimed:
				if _, werr := writeAt(j.f, buf[:n], pos); werr != nil {
					return wrote, diskError(j.t.Partial, werr)
				}
				q.moved.Add(int64(n))
				if d.progress != nil {
					d.progress(j.t.File.Path, int64(n))
				}
				if int64(n) == limit { // the chunk is whole
					idx := claimed[next]
					next++
					if err := d.chunkDone(q, j, idx); err != nil {
						return wrote, err
					}
				}
			}
			pos += int64(n)
		}
		if rerr != nil {
			if off, end := s.bounds(); off > end && next == len(claimed) {
				return wrote, nil
			}
			if rerr == io.EOF {
				return wrote, fmt.Errorf("%w: whole-file body ended at byte %d of %d", ErrBadResponse, pos, j.t.File.Size)
			}
			return wrote, stallErr(rerr, idled())
		}
	}
}

// region is what the bytes of a whole-file body at a position are to
// streamWhole.
type region int

const (
	regionNone    region = iota // none: the body is needed no further, or is wrong
	regionDrop                  // bytes nobody needs, read and dropped
	regionOwn                   // the span's own bytes
	regionClaimed               // a chunk taken from the queue
)

// wholeRegion returns the region the whole-file body's byte pos is in,
// the span s's own bytes, the claimed chunk claimed[next] or bytes to drop
// up to the next of those, and how many bytes from pos on it holds.
// regionNone, with a nil error, says nothing from pos on is needed; with
// an error, that the body passed the span's start.
func wholeRegion(s *span, pos int64, claimed []int, next int) (region, int64, error) {
	j := s.j
	off, end := s.bounds()
	own := off <= end
	switch {
	case own && pos == off:
		return regionOwn, end - pos + 1, nil
	case next < len(claimed) && pos >= int64(claimed[next])*j.chunk:
		return regionClaimed, int64(claimed[next])*j.chunk + j.chunkLen(claimed[next]) - pos, nil
	case own && off < pos:
		return regionNone, 0, fmt.Errorf("%w: whole-file body passed byte %d of the span", ErrBadResponse, off)
	}
	u := int64(-1)
	if own && off > pos {
		u = off
	}
	if next < len(claimed) {
		if c := int64(claimed[next]) * j.chunk; u < 0 || c < u {
			u = c
		}
	}
	if u < 0 {
		return regionNone, 0, nil
	}
	return regionDrop, u - pos, nil
}

// land writes p, bytes of s's own range, into its partial file and
// counts what it wrote toward the queue's total and the progress.
func (d *downloader) land(q *queue, s *span, p []byte) (int, error) {
	m, err := s.write(p)
	if err != nil {
		return m, diskError(s.j.t.Partial, err)
	}
	q.moved.Add(int64(m))
	if d.progress != nil && m > 0 {
		d.progress(s.j.t.File.Path, int64(m))
	}
	return m, nil
}

func stallErr(err error, idled bool) error {
	if idled {
		return fmt.Errorf("%w: no bytes for the idle timeout: %v", errStalled, err)
	}
	return err
}
