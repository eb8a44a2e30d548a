//go:build unix

package main

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
)

// TestHostKill9 kills the host outright, repeatedly: the plugin and the
// native server must be gone within 2 s each time.
func TestHostKill9(t *testing.T) {
	linuxOnly(t)
	trials := 5
	if testing.Short() {
		trials = 2
	}
	if n, err := strconv.Atoi(os.Getenv("DRAMA_ORPHAN_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	for i := range trials {
		h, pluginPID, nativePID := nativetest.StartHost(t, pluginBin, nativetest.StartRequest(t, native.CUDA, standinBin))
		h.Process.Signal(syscall.SIGKILL)
		h.Wait()
		for _, pid := range []int{pluginPID, nativePID} {
			if !enginetest.WaitGone(pid, 2*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("trial %d: pid %d outlived its killed host (plugin %d, native %d)", i, pid, pluginPID, nativePID)
			}
		}
	}
}
