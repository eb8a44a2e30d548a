package native

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/drama-tts/drama/internal/proc"
)

// sysProcAttr puts the child in its own process group and has the kernel
// kill it when the thread that started it dies (the caller keeps that
// thread locked for the child's lifetime).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// procIdentity returns the executable and start time (clock ticks since
// boot, field 22 of /proc/PID/stat) of a running process.
func procIdentity(pid int) (exe string, start uint64, err error) {
	exe, err = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", 0, err
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	st, err := proc.Read(pid)
	if err != nil {
		return "", 0, fmt.Errorf("native: pid %d: %w", pid, err)
	}
	return exe, st.StartTime, nil
}
