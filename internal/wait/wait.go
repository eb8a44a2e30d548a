// Package wait holds the one pause that gives way to a context: a retry's
// backoff, a wait for a held flock, a paced stream's next frame. It
// imports the standard library alone, and every package may import it.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, and then returns ctx's error. A d
// of zero or less returns nil at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
