package httpapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestQueueFIFOAndBound(t *testing.T) {
	q := newQueue(3)
	ctx := context.Background()
	if err := q.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := q.acquire(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			q.release()
		}()
		waitFor(t, func() bool { return q.depth() == i+1 })
	}
	if err := q.acquire(ctx); !errors.Is(err, errQueueFull) {
		t.Fatalf("4th waiter: %v, want errQueueFull", err)
	}
	q.release()
	wg.Wait()
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("order %v, want [0 1 2]", order)
	}
	if q.busy() {
		t.Fatal("slot still held")
	}
}

func TestQueueWaiterLeaves(t *testing.T) {
	q := newQueue(5)
	q.acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- q.acquire(ctx) }()
	waitFor(t, func() bool { return q.depth() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if q.depth() != 0 {
		t.Fatal("a waiter that left is still queued")
	}
	q.release()
	if q.busy() {
		t.Fatal("slot handed to a waiter that left")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}
