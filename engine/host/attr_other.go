//go:build !linux

package host

import "syscall"

// pluginAttr sets nothing where the OS has no parent-death signal; the
// plugin's parent watcher covers it.
func pluginAttr() *syscall.SysProcAttr { return nil }
