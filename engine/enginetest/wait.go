package enginetest

import (
	"testing"
	"time"

	"github.com/drama-tts/drama/internal/emutest"
)

// WaitFor polls cond every millisecond until it holds, and fails the test
// if it does not within 10 s (times $DRAMA_TEST_TIME_SCALE: see
// emutest.Scale): for states an engine, its supervisor or a server reaches
// on its own goroutines.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	limit := emutest.Scale(10 * time.Second)
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met in %s", limit)
		}
		time.Sleep(time.Millisecond)
	}
}
