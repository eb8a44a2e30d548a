//go:build !windows

package enginetest

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/drama-tts/drama/internal/proc"
)

// Alive reports whether pid names a running process: one that exists and
// is not a zombie waiting to be reaped.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, err := proc.Read(pid)
	if errors.Is(err, proc.ErrFormat) {
		return true
	}
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) || !proc.Mounted()
	}
	return !st.Exited()
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
