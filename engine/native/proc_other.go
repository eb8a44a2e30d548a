//go:build !linux && !darwin

package native

import (
	"strconv"
	"syscall"
)

const supported = false

func sysProcAttr() *syscall.SysProcAttr { return nil }

func procIdentity(pid int) (string, uint64, error) { return "", 0, ErrUnsupported }

func signalGroup(pgid int, sig syscall.Signal) error { return ErrUnsupported }

func sameExe(recorded, running string) bool { return false }

var (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)

// signalName names sig by its number: "signal 9".
func signalName(sig syscall.Signal) string { return "signal " + strconv.Itoa(int(sig)) }
