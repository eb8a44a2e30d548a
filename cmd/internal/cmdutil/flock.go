package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drama-tts/drama/pins/hub"
)

// FlockAdvice adds to a flock another process held for the whole wait
// (hub.ErrFlockHeld) who takes that flock and the user's flag that waits
// longer; other errors, and nil, come back as they are.
func FlockAdvice(err error, holder, waitFlag string) error {
	if !errors.Is(err, hub.ErrFlockHeld) {
		return err
	}
	return fmt.Errorf("%s holds it: %w (or give a longer %s)", holder, err, waitFlag)
}

// FlockRoot takes the root's fetch flock (<root>/.drama/fetch.lock), which
// drama fetch and drama rm hold while they change the root, waiting up to
// wait (the user's --lock-wait). Held past the wait, its error says who
// takes it and that --lock-wait waits longer.
func FlockRoot(ctx context.Context, root string, wait time.Duration) (release func(), err error) {
	release, err = hub.FlockRoot(ctx, root, wait)
	if err != nil {
		return nil, FlockAdvice(err, "another drama fetch or drama rm of this root", "--lock-wait")
	}
	return release, nil
}
