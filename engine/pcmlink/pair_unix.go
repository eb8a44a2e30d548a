//go:build unix

package pcmlink

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// Pair makes a link: the host's Receiver, and the plugin's end as a file
// to hand the plugin process (exec.Cmd.ExtraFiles, with EnvFD naming its
// descriptor there). The caller closes the file once the plugin started.
// Both ends are close-on-exec, so no other child of the host inherits one.
func Pair() (*Receiver, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("pcm link: socketpair: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "pcm link")
	conn, err := net.FileConn(mine)
	mine.Close()
	theirs := os.NewFile(uintptr(fds[1]), "pcm link, plugin end")
	if err != nil {
		theirs.Close()
		return nil, nil, fmt.Errorf("pcm link: %w", err)
	}
	return NewReceiver(conn), theirs, nil
}

// FromEnv returns the plugin's end of the link its host handed down, or
// nil when the host gave none (an older host). It takes the descriptor
// from EnvFD, removes the variable and makes the descriptor close-on-exec,
// so the engine process the plugin starts inherits neither.
func FromEnv() (*Sender, error) {
	v, ok := os.LookupEnv(EnvFD)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(EnvFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("pcm link: %s=%q: want a file descriptor number of 3 or more", EnvFD, v)
	}
	syscall.CloseOnExec(fd)
	s, err := NewSenderFile(os.NewFile(uintptr(fd), "pcm link"))
	if err != nil {
		return nil, fmt.Errorf("pcm link: %s=%d: %w", EnvFD, fd, err)
	}
	return s, nil
}
