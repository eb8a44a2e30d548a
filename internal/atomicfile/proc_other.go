//go:build unix && !linux

package atomicfile

import (
	"errors"
	"syscall"
)

// startTime reports whether process pid runs. Off Linux its start time is
// not read ("0"), so a recycled pid keeps its temporaries until it ends.
func startTime(pid int) (string, bool) {
	err := syscall.Kill(pid, 0)
	if err == nil || errors.Is(err, syscall.EPERM) {
		return "0", true
	}
	return "", false
}
