package cmdutil

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/pins/hub"
)

// TestFlockAdviceSaysWhoAndWhichFlag: a flock held past the wait gets who
// takes it and the user's flag that waits longer; other errors pass.
func TestFlockAdviceSaysWhoAndWhichFlag(t *testing.T) {
	dir := t.TempDir()
	release, err := hub.Flock(context.Background(), filepath.Join(dir, "x.lock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, held := hub.Flock(context.Background(), filepath.Join(dir, "x.lock"), 0)
	err = FlockAdvice(held, "another drama fetch", "--lock-wait")
	if !errors.Is(err, hub.ErrFlockHeld) || !strings.HasPrefix(err.Error(), "another drama fetch holds it: hub: ") || !strings.HasSuffix(err.Error(), "(or give a longer --lock-wait)") {
		t.Errorf("held: %v", err)
	}
	other := errors.New("disk on fire")
	if FlockAdvice(other, "x", "--y") != other || FlockAdvice(nil, "x", "--y") != nil {
		t.Error("other errors and nil must come back as they are")
	}
}
