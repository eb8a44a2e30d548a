package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock on path, waiting at most wait, and writes
// the process id into it. The lock goes with the process, so a killed
// fetch never leaves it held. The error on timeout names the holder's pid.
func Lock(ctx context.Context, path string, wait time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o664)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			holder := lockHolder(path)
			f.Close()
			return nil, fmt.Errorf("%w: %s is held by %s; waited %s: wait for it to finish or stop it, then run again", ErrLocked, path, holder, wait)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			f.Close()
			return nil, err
		}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { _ = f.Truncate(0); f.Close() }, nil
}

func lockHolder(path string) string {
	data, _ := os.ReadFile(path)
	if pid := strings.TrimSpace(string(data)); pid != "" {
		return "pid " + pid
	}
	return "another process"
}
