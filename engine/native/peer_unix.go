//go:build unix

package native

import (
	"net"
	"syscall"
)

// peerClosed tells whether the server closed c, or sent on it unasked,
// while it waited: a peek that does not wait finds its end or stray bytes.
// An idle connection the server still holds has nothing to read.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var closed bool
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n > 0 || err == nil || (err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR)
		return true
	})
	return closed || err != nil
}
