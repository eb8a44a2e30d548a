package engine

import (
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// setParentDeathSignal asks the kernel to send SIGTERM when the parent dies.
func setParentDeathSignal(logger hclog.Logger) {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		logger.Warn("parent-death signal not set", "error", err)
	}
}
