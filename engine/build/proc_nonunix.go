//go:build !unix

package build

import (
	"context"
	"os/exec"
)

// runGroup runs cmd, killed when ctx ends.
func runGroup(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	return cmd.Wait()
}
