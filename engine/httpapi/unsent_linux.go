package httpapi

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// boundUnsent sets TCP_NOTSENT_LOWAT on c, a TCP connection: a write then
// waits while n bytes or more of what was written are still unsent. False
// when c is no TCP connection or the kernel refuses (before Linux 3.12).
func boundUnsent(c net.Conn, n int) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n) }); err != nil {
		return false
	}
	return serr == nil
}
