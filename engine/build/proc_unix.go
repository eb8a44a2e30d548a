//go:build unix

package build

import (
	"context"
	"os/exec"
	"runtime"
	"syscall"
)

// runGroup runs cmd in its own process group, killed as a group when ctx
// ends; on Linux the kernel also kills it if drama dies (kill -9).
func runGroup(ctx context.Context, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() {
		// The parent-death signal follows the thread that started the
		// child, so that thread stays locked until the child is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			done <- err
			return
		}
		stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		err := cmd.Wait()
		stop()
		done <- err
	}()
	return <-done
}
