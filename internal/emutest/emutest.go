// Package emutest is for tests that may run under a user-mode emulator, as
// make test-arm64 runs linux/arm64 test binaries under qemu-user (and the
// kernel's binfmt_misc runs every arm64 binary they start under it too).
// It says whether an emulator runs this process, and scales a test's
// deadlines by the factor the make target sets. Tests only.
package emutest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// ScaleEnv is the variable that multiplies the deadlines of tests bound by
// time (make test-arm64 sets it: code runs several times slower under
// emulation). Unset, the factor is 1.
const ScaleEnv = "DRAMA_TEST_TIME_SCALE"

// Emulator returns the program that runs this process when that is not the
// process's own binary: /usr/bin/qemu-aarch64 under qemu-user, "" on a
// kernel that runs the binary itself. qemu-user answers this process's own
// /proc/self itself (the binary it runs as exe, a start time of its own
// making), while the kernel's entry under /proc/PID/task/PID, which qemu
// passes through, names the emulator.
func Emulator() string {
	self, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return ""
	}
	pid := strconv.Itoa(os.Getpid())
	kernel, err := os.Readlink("/proc/" + pid + "/task/" + pid + "/exe")
	if err != nil || kernel == self {
		return ""
	}
	return kernel
}

// SkipEmulated skips t, with one line naming the emulator and why the test
// cannot run under it, when an emulator runs this process.
func SkipEmulated(t testing.TB, why string) {
	t.Helper()
	if e := Emulator(); e != "" {
		t.Skipf("under emulation (%s): %s", filepath.Base(e), why)
	}
}

// Factor returns the factor in $DRAMA_TEST_TIME_SCALE, 1 when it is unset.
// A value that is not a number of 1 or more panics: a make target set it
// wrong.
func Factor() float64 {
	v := os.Getenv(ScaleEnv)
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		panic(fmt.Sprintf("emutest: %s=%q: want a number of 1 or more", ScaleEnv, v))
	}
	return f
}

// Scale returns d times Factor: the deadline of a test bound by time.
func Scale(d time.Duration) time.Duration { return time.Duration(float64(d) * Factor()) }
