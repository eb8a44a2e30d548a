package native

import (
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in its own process group. macOS has no
// parent-death signal: the plugin stops its child when it exits.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// procIdentity returns the command name (the kernel keeps 16 characters)
// and the start time (microseconds since the epoch) of a running process.
func procIdentity(pid int) (exe string, start uint64, err error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return "", 0, err
	}
	if kp.Proc.P_pid != int32(pid) {
		return "", 0, syscall.ESRCH
	}
	comm := kp.Proc.P_comm[:]
	for i, c := range comm {
		if c == 0 {
			comm = comm[:i]
			break
		}
	}
	tv := kp.Proc.P_starttime
	return string(comm), uint64(tv.Sec)*1e6 + uint64(tv.Usec), nil
}

// sameExe compares an executable path with what procIdentity returned.
func sameExe(recorded, running string) bool {
	base := filepath.Base(recorded)
	if len(base) > 16 {
		base = base[:16]
	}
	return base == running
}
