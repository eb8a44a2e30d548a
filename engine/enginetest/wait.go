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
	if !poll(limit, time.Millisecond, cond) {
		t.Fatalf("condition not met in %s", limit)
	}
}

// Within polls cond until it holds, and reports whether it did within
// limit (times $DRAMA_TEST_TIME_SCALE: see emutest.Scale): for a wait
// whose failure the caller tells itself, with what it saw. It polls every
// millisecond at first, then less often, up to every 50 ms, so that a
// cond asking a server or reading /proc does not spin.
func Within(limit time.Duration, cond func() bool) bool {
	return poll(emutest.Scale(limit), 50*time.Millisecond, cond)
}

// poll checks cond until it holds or limit has passed, pausing a
// millisecond after the first check and twice as long after each next
// one, up to every.
func poll(limit, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, every)
	}
	return true
}
