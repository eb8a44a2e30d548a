package cmdutil

import (
	"errors"
	"fmt"

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
