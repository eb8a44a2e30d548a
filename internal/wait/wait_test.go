package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("a pause that ends: want nil, got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: want context.Canceled at once, got %v", err)
	}
	if err := Sleep(ctx, 0); err != nil {
		t.Errorf("no pause: want nil, got %v", err)
	}
}
