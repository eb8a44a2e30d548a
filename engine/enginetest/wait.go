package enginetest

import (
	"testing"
	"time"
)

// WaitFor polls cond every millisecond until it holds, and fails the test
// if it does not within 10 s: for states an engine, its supervisor or a
// server reaches on its own goroutines.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
