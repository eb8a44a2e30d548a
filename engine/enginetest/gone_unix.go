//go:build !windows

package enginetest

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Alive reports whether pid names a running process: one that exists and
// is not a zombie waiting to be reaped.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err) || !procMounted()
	}
	if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

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

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
