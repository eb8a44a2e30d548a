package upload

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSlotWaitIsBounded: a taken slot turns a second taker away once its
// wait is over (or at once with no wait), or when its context ends; given
// back, it is taken again, and the hold measured is the Retry-After.
func TestSlotWaitIsBounded(t *testing.T) {
	s := NewSlot(7 * time.Second)
	if s.Hold() != 7*time.Second {
		t.Fatalf("hold before any: %v", s.Hold())
	}
	release, err := s.Take(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(context.Background(), 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("no wait on a taken slot: %v", err)
	}
	if _, err := s.Take(context.Background(), 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("a bounded wait on a taken slot: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Take(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait whose client left: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := s.Take(context.Background(), time.Minute)
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	release() // a second release gives back nothing more
	if err := <-got; err != nil {
		t.Fatalf("a waiter once the slot is given back: %v", err)
	}
	if s.Hold() >= 7*time.Second {
		t.Fatalf("hold after two measured: %v", s.Hold())
	}
	r1, err1 := s.Take(context.Background(), 0)
	if err1 != nil {
		t.Fatalf("the slot after every release: %v", err1)
	}
	r1()
}
