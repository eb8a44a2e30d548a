package hub

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// queue hands chunks to workers, tracks unfinished files, holds the first
// fatal error, and adapts how many workers may run: halved after three
// failures in a row, raised by one after eight successes, and past
// DefaultWorkers only as far as more streams raise the rate (see ramp).
// Workers whose id is at or past the lower of the two wait.
type queue struct {
	mu    sync.Mutex
	cond  *sync.Cond
	tasks []task
	open  int // files not yet verified
	err   error
	limit int
	max   int
	fails int
	oks   int
	// window is how many chunks past a file's hashed prefix may be taken.
	window int
	// running are the spans being fetched; an idle worker splits the
	// largest one that has run for splitAfter (splitMin > 0).
	running    map[*span]struct{}
	splitAfter time.Duration
	splitMin   int64
	pace       pace
	ramp       *ramp
	// moved counts the bytes written since the ramp's last tick.
	moved atomic.Int64
}

// maxWindowBytes bounds what may be downloaded past a file's hashed
// prefix, and so what is left to hash after its last byte.
const maxWindowBytes = 256 << 20

func newQueue(workers, files int, chunk int64) *queue {
	window := min(workers+4, max(4, int(maxWindowBytes/chunk)))
	q := &queue{open: files, limit: workers, max: workers, window: window, running: map[*span]struct{}{},
		ramp: newRamp(DefaultWorkers, workers)}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// take waits for a span this worker may fetch: a queued chunk inside the
// window past its file's hashed prefix (so that when a file's last byte
// lands little is left to hash), else half of a straggling span. false
// means stop.
func (q *queue) take(worker int) (*span, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.err != nil || q.open == 0 {
			return nil, false
		}
		if worker < q.allowed() {
			if s := q.next(); s != nil {
				q.running[s] = struct{}{}
				return s, true
			}
		}
		q.cond.Wait()
	}
}

// next returns a new span from the queue, else a split of the largest
// straggler, else nil.
func (q *queue) next() *span {
	now := time.Now()
	if i := q.eligible(); i >= 0 {
		t := q.tasks[i]
		q.tasks = append(q.tasks[:i], q.tasks[i+1:]...)
		return newSpan(t, now)
	}
	if q.splitMin <= 0 {
		return nil
	}
	var best *span
	var bestRem int64
	for s := range q.running {
		if r := s.remaining(); r > bestRem {
			best, bestRem = s, r
		}
	}
	if best == nil {
		return nil
	}
	return best.split(now, q.pace.after(best, q.splitAfter), q.splitMin)
}

// finished forgets a span that is done and learns its pace.
func (q *queue) finished(s *span) {
	q.mu.Lock()
	delete(q.running, s)
	q.pace.record(s, time.Now())
	q.mu.Unlock()
}

// tick wakes the waiting workers every d so they can look for stragglers,
// until stop is called.
func (q *queue) tick(d time.Duration) (stop func()) {
	t := time.NewTicker(d)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				q.cond.Broadcast()
			case <-done:
				return
			}
		}
	}()
	return func() { t.Stop(); close(done) }
}

// allowed is how many workers may fetch now; q.mu is held.
func (q *queue) allowed() int { return min(q.limit, q.ramp.level()) }

// rampLoop feeds the ramp every rampTick and calls changed (outside the
// lock) with the number of streams allowed when it moves, until stop is
// called. It starts nothing when the ramp has nowhere to go.
func (q *queue) rampLoop(changed func(int)) (stop func()) {
	if q.ramp.cur >= q.ramp.max {
		return func() {}
	}
	t := time.NewTicker(rampTick)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				if n, moved := q.rampStep(); moved {
					changed(n)
				}
			case <-done:
				return
			}
		}
	}()
	return func() { t.Stop(); close(done) }
}

// rampStep gives the ramp one tick's bytes and returns the number of
// workers allowed and whether it changed, waking the workers if it did.
func (q *queue) rampStep() (int, bool) {
	q.mu.Lock()
	before := q.allowed()
	q.ramp.observe(q.moved.Swap(0), len(q.running) >= before)
	after := q.allowed()
	q.mu.Unlock()
	if after != before {
		q.cond.Broadcast()
	}
	return after, after != before
}

// eligible returns the index of the first task inside its file's window.
func (q *queue) eligible() int {
	for i, t := range q.tasks {
		if int64(t.idx) < t.j.hashedChunks.Load()+int64(q.window) {
			return i
		}
	}
	return -1
}

// claim removes every queued chunk of j and returns their indexes in
// ascending order.
func (q *queue) claim(j *job) []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	var idx []int
	rest := q.tasks[:0]
	for _, t := range q.tasks {
		if t.j == j {
			idx = append(idx, t.idx)
		} else {
			rest = append(rest, t)
		}
	}
	q.tasks = rest
	slices.Sort(idx)
	return idx
}

func (q *queue) push(ts ...task) {
	q.mu.Lock()
	q.tasks = append(q.tasks, ts...)
	q.mu.Unlock()
	q.cond.Broadcast()
}

// fail records the first fatal error and wakes every worker to stop.
func (q *queue) fail(err error) {
	q.mu.Lock()
	if q.err == nil && err != nil {
		q.err = err
	}
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (q *queue) jobDone() {
	q.mu.Lock()
	q.open--
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (q *queue) result() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// failure counts a transient failure and returns the worker limit and
// whether it changed.
func (q *queue) failure() (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.oks = 0
	q.fails++
	if q.fails < 3 || q.limit == 1 {
		return q.allowed(), false
	}
	before := q.allowed()
	q.fails, q.limit = 0, max(1, q.limit/2)
	return q.allowed(), q.allowed() != before
}

// success counts a finished stream and returns the worker limit and
// whether it was raised.
func (q *queue) success() (int, bool) {
	q.mu.Lock()
	q.fails = 0
	q.oks++
	raised := q.oks >= 8 && q.limit < q.max
	before := q.allowed()
	if raised {
		q.oks = 0
		q.limit++
	}
	n := q.allowed()
	raised = n != before
	q.mu.Unlock()
	if raised {
		q.cond.Broadcast()
	}
	return n, raised
}
