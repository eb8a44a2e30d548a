package enginetest

import "time"

// WaitGone waits up to d for pid to stop running and reports whether it did.
func WaitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
