package enginetest

import "syscall"

// childAttr returns no special attributes on Windows.
func childAttr() *syscall.SysProcAttr { return nil }
