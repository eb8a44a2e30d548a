package hub

import (
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of straggler splitting.
const (
	DefaultSplitAfter = 3 * time.Second
	DefaultSplitMin   = 2 << 20
)

// span is one stream's share of a chunk: the bytes [off, end] it has yet
// to write. An idle worker may take the upper half of what remains of a
// span that has run for a while (a straggler), lowering its end; the chunk
// is done when all of its spans are.
type span struct {
	j       *job
	idx     int
	parts   *atomic.Int32 // spans of the chunk not finished yet
	stolen  bool          // made by split
	initLen int64         // bytes when made
	created time.Time

	mu       sync.Mutex
	off      int64
	end      int64
	since    time.Time
	wasSplit bool // lost part of its range to another span
}

func newSpan(t task, now time.Time) *span {
	first := int64(t.idx) * t.j.chunk
	parts := new(atomic.Int32)
	parts.Store(1)
	n := t.j.chunkLen(t.idx)
	return &span{j: t.j, idx: t.idx, parts: parts, initLen: n, created: now, off: first, end: first + n - 1, since: now}
}

func (s *span) bounds() (off, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.off, s.end
}

// write stores the bytes of p that still belong to the span, at its
// current offset, and returns how many it stored (0 once a split has
// taken the rest).
func (s *span) write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int(min(int64(len(p)), max(0, s.end-s.off+1)))
	if n == 0 {
		return 0, nil
	}
	if _, err := writeAt(s.j.f, p[:n], s.off); err != nil {
		return 0, err
	}
	s.off += int64(n)
	return n, nil
}

// split hands the upper half of what remains to a new span when the span
// has run for at least after and at least 2*minPart bytes remain.
func (s *span) split(now time.Time, after time.Duration, minPart int64) *span {
	s.mu.Lock()
	defer s.mu.Unlock()
	rem := s.end - s.off + 1
	if now.Sub(s.since) < after || rem < 2*minPart {
		return nil
	}
	mid := s.off + rem/2
	ns := &span{j: s.j, idx: s.idx, parts: s.parts, stolen: true, initLen: s.end - mid + 1, created: now, off: mid, end: s.end, since: now}
	s.parts.Add(1)
	s.end, s.since, s.wasSplit = mid-1, now, true
	return ns
}

// remaining is what the span still has to write.
func (s *span) remaining() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end - s.off + 1
}

// minSplitAfter is the least time a span runs before it may be split.
const minSplitAfter = 100 * time.Millisecond

// pace learns how long a byte takes (an exponentially weighted mean over
// spans that ran whole) and calls a span a straggler once it has run twice
// as long as its size predicts, never sooner than minSplitAfter nor later
// than the configured limit.
type pace struct {
	nsPerByte float64
	samples   int
}

func (p *pace) record(s *span, now time.Time) {
	s.mu.Lock()
	whole := !s.wasSplit && !s.stolen
	s.mu.Unlock()
	if !whole || s.initLen <= 0 {
		return
	}
	v := float64(now.Sub(s.created)) / float64(s.initLen)
	if p.samples == 0 {
		p.nsPerByte = v
	} else {
		p.nsPerByte = 0.8*p.nsPerByte + 0.2*v
	}
	p.samples++
}

// after is how long s may run before it counts as a straggler.
func (p *pace) after(s *span, limit time.Duration) time.Duration {
	if p.samples < 4 {
		return limit
	}
	return min(limit, max(minSplitAfter, time.Duration(2*p.nsPerByte*float64(s.initLen))))
}
