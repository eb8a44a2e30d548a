package httpapi

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// errQueueFull is returned by acquire when the queue is at its bound.
var errQueueFull = errors.New("queue full")

// queue hands out one slot, first in first out, to at most max waiters.
// It is safe for concurrent use.
type queue struct {
	mu      sync.Mutex
	max     int
	held    bool
	waiting *list.List // of chan struct{}, closed when the slot is handed over
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
	if q.waiting.Len() >= q.max {
		q.mu.Unlock()
		return errQueueFull
	}
	ch := make(chan struct{})
	el := q.waiting.PushBack(ch)
	q.mu.Unlock()

	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		q.mu.Lock()
		defer q.mu.Unlock()
		select {
		case <-ch: // handed the slot just as ctx ended: pass it on
			q.handOff()
		default:
			q.waiting.Remove(el)
		}
		return ctx.Err()
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
	close(front.Value.(chan struct{}))
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
