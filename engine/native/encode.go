package native

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/drama-tts/drama/engine"
)

// EncodeConfig is how to run the voice encoder.
type EncodeConfig struct {
	Flavor *Flavor
	Binary string   // the encoder binary
	Codec  string   // path of codec.pth
	Env    []string // its complete environment
	TmpDir string   // where codes files are written; "" is os.TempDir
}

// EncodeClip runs the voice encoder on one clip (a canonical WAV file) and
// returns its codes, codebook-major. A failure is an *ExitError carrying the
// encoder's output; cancelling ctx kills the encoder's process group.
func EncodeClip(ctx context.Context, cfg EncodeConfig, clip string) ([][]int, error) {
	dir, err := os.MkdirTemp(cfg.TmpDir, "drama-encode-*")
	if err != nil {
		return nil, fmt.Errorf("native: encode: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "codes.json")
	if err := runToEnd(ctx, cfg.Binary, cfg.Flavor.EncodeArgs(cfg.Codec, clip, out), cfg.Env); err != nil {
		return nil, fmt.Errorf("native: encode %s: %w", clip, err)
	}
	return ReadCodes(out)
}

// runToEnd runs a command directly in its own process group (with the
// parent-death signal, from a locked thread) and waits for it.
func runToEnd(ctx context.Context, bin string, args, env []string) error {
	if !supported {
		return ErrUnsupported
	}
	tail := engine.NewTail(16 << 10)
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.SysProcAttr = env, sysProcAttr()
	cmd.Stdout, cmd.Stderr = tail, tail
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the child
		if err := cmd.Start(); err != nil {
			done <- err
			return
		}
		stop := context.AfterFunc(ctx, func() { signalGroup(cmd.Process.Pid, sigKill) })
		err := cmd.Wait()
		stop()
		done <- err
	}()
	err := <-done
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		e := &ExitError{Code: ee.ExitCode(), Tail: tail.String()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Code, e.Signal = -1, signalName(ws.Signal())
		}
		return e
	}
	return err
}
