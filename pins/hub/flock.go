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

	"github.com/drama-tts/drama/internal/wait"
)

// Flock takes an exclusive flock on path, waiting at most patience, and writes
// the process id into it. The flock goes with the process, so a killed
// fetch never leaves it held. The error on timeout wraps ErrFlockHeld and
// names the holder's pid.
func Flock(ctx context.Context, path string, patience time.Duration) (release func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("hub: flock: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o664)
	if err != nil {
		return nil, fmt.Errorf("hub: flock: %w", err)
	}
	deadline := time.Now().Add(patience)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("hub: flock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			holder := flockHolder(path)
			f.Close()
			return nil, &heldError{path: path, holder: holder, waited: patience}
		}
		if err := wait.Sleep(ctx, 100*time.Millisecond); err != nil {
			f.Close()
			return nil, err
		}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { _ = f.Truncate(0); f.Close() }, nil
}

// flockHolder is the pid a flock's holder wrote into path.
func flockHolder(path string) string {
	data, _ := os.ReadFile(path)
	if pid := strings.TrimSpace(string(data)); pid != "" {
		return "pid " + pid
	}
	return "another process"
}

// heldError is a flock another process held for the whole wait.
type heldError struct {
	path, holder string
	waited       time.Duration
}

// Error names the flock's file and its holder, and what to do.
func (e *heldError) Error() string {
	return fmt.Sprintf("hub: %s is held by %s; waited %s: wait for it to finish or stop it, then run again", e.path, e.holder, e.waited)
}

// Unwrap returns ErrFlockHeld.
func (e *heldError) Unwrap() error { return ErrFlockHeld }
