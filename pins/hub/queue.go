package hub

import "sync"

// queue hands chunks to workers, tracks unfinished files, holds the first
// fatal error, and adapts how many workers may run: halved after three
// failures in a row, raised by one after eight successes.
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
}

func newQueue(workers, files int) *queue {
	q := &queue{open: files, limit: workers, max: workers}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// take waits for a chunk this worker may fetch; false means stop.
func (q *queue) take(worker int) (task, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.err == nil && q.open > 0 && (len(q.tasks) == 0 || worker >= q.limit) {
		q.cond.Wait()
	}
	if q.err != nil || q.open == 0 {
		return task{}, false
	}
	t := q.tasks[0]
	q.tasks = q.tasks[1:]
	return t, true
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
		return q.limit, false
	}
	q.fails, q.limit = 0, max(1, q.limit/2)
	return q.limit, true
}

func (q *queue) success() {
	q.mu.Lock()
	q.fails = 0
	q.oks++
	raised := q.oks >= 8 && q.limit < q.max
	if raised {
		q.oks = 0
		q.limit++
	}
	q.mu.Unlock()
	if raised {
		q.cond.Broadcast()
	}
}
