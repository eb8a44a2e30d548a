package httpapi

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// errQueueFull is returned by acquire when the queue is at its bound.
var errQueueFull = errors.New("queue full")

// errDraining is returned by acquire once the server is stopping.
var errDraining = errors.New("the server is stopping")

// waiter is one request in the queue; ch is closed when it is handed the
// slot, or sent away with err.
type waiter struct {
	ch  chan struct{}
	err error
}

// queue hands out one slot, first in first out, to at most max waiters.
// It is safe for concurrent use.
type queue struct {
	mu       sync.Mutex
	max      int
	held     bool
	draining bool
	waiting  *list.List // of *waiter
}

func newQueue(max int) *queue { return &queue{max: max, waiting: list.New()} }

// acquire waits for the slot. It returns errQueueFull at once when max
// requests already wait, or ctx's error when ctx ends first (the waiter then
// leaves the queue).
func (q *queue) acquire(ctx context.Context) error {
	q.mu.Lock()
	if !q.held {
		q.held = true
		q.mu.Unlock()
		return nil
	}
	if q.draining {
		q.mu.Unlock()
		return errDraining
	}
	if q.waiting.Len() >= q.max {
		q.mu.Unlock()
		return errQueueFull
	}
	w := &waiter{ch: make(chan struct{})}
	el := q.waiting.PushBack(w)
	q.mu.Unlock()

	select {
	case <-w.ch:
		return w.err
	case <-ctx.Done():
		q.mu.Lock()
		defer q.mu.Unlock()
		select {
		case <-w.ch: // handed the slot (or sent away) just as ctx ended
			if w.err == nil {
				q.handOff()
			}
		default:
			q.waiting.Remove(el)
		}
		return ctx.Err()
	}
}

// drain sends every waiter away with errDraining, and every later request
// that would wait; the slot's holder keeps it.
func (q *queue) drain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.draining = true
	for el := q.waiting.Front(); el != nil; el = q.waiting.Front() {
		w := q.waiting.Remove(el).(*waiter)
		w.err = errDraining
		close(w.ch)
	}
}

// release gives the slot to the first waiter, or frees it.
func (q *queue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.handOff()
}

// handOff must be called with mu held by the slot's holder.
func (q *queue) handOff() {
	front := q.waiting.Front()
	if front == nil {
		q.held = false
		return
	}
	q.waiting.Remove(front)
	close(front.Value.(*waiter).ch)
}

// depth is the number of requests waiting (not counting the one holding the
// slot).
func (q *queue) depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting.Len()
}

// busy reports whether the slot is held.
func (q *queue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held
}
