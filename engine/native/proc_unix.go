//go:build linux || darwin

package native

import (
	"errors"
	"syscall"
)

// supported reports whether supervision works on this OS.
const supported = true

// signalGroup sends sig to the process group pgid.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

var (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)
