//go:build linux || darwin

package native

import (
	"errors"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
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

// signalName names sig as its constant does (SIGKILL), where Go's own
// String gives a description ("killed") that reads wrong after "killed by".
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}
