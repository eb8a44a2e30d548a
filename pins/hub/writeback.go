package hub

import (
	"os"
	"sync"
)

// writeback starts the kernel writing hashed ranges of a partial file to
// disk, on its own goroutine so that a busy disk never holds up hashing;
// the fsync before the rename then has little left to flush. Ranges that
// arrive while it is busy are dropped: that fsync covers them.
type writeback struct {
	ranges chan [2]int64
	done   chan struct{}
	once   sync.Once
}

func newWriteback(f *os.File) *writeback {
	w := &writeback{ranges: make(chan [2]int64, 8), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for r := range w.ranges {
			startWriteback(f, r[0], r[1])
		}
	}()
	return w
}

// add queues [off, off+n) unless the queue is full.
func (w *writeback) add(off, n int64) {
	select {
	case w.ranges <- [2]int64{off, n}:
	default:
	}
}

// stop waits for the goroutine to finish, so the file may be synced and
// closed. It may be called more than once.
func (w *writeback) stop() {
	w.once.Do(func() { close(w.ranges) })
	<-w.done
}
