//go:build !windows

package enginetest

import "syscall"

// childAttr puts the child in its own process group.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
