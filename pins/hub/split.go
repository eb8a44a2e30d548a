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
	j      *job
	idx    int
	parts  *atomic.Int32 // spans of the chunk not finished yet
	stolen bool          // made by split

	mu    sync.Mutex
	off   int64
	end   int64
	since time.Time
}

func newSpan(t task, now time.Time) *span {
	first := int64(t.idx) * t.j.chunk
	parts := new(atomic.Int32)
	parts.Store(1)
	return &span{j: t.j, idx: t.idx, parts: parts, off: first, end: first + t.j.chunkLen(t.idx) - 1, since: now}
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
	if _, err := s.j.f.WriteAt(p[:n], s.off); err != nil {
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
	ns := &span{j: s.j, idx: s.idx, parts: s.parts, stolen: true, off: mid, end: s.end, since: now}
	s.parts.Add(1)
	s.end, s.since = mid-1, now
	return ns
}

// remaining is what the span still has to write.
func (s *span) remaining() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end - s.off + 1
}
