package host

import "syscall"

// pluginAttr asks the kernel to send the plugin SIGTERM when the host's
// starting thread (kept alive as long as the plugin) dies with the host.
func pluginAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
