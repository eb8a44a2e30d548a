package native

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", 0, fmt.Errorf("native: /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return "", 0, fmt.Errorf("native: /proc/%d/stat: want 22 fields, got %d", pid, len(fields)+2)
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	return exe, start, err
}
