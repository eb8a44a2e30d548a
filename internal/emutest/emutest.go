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
	"strings"
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

// SkipLogEnv is the environment variable naming the file each skip of a
// suite or a test appends its line to.
const SkipLogEnv = "DRAMA_SKIP_LOG"

// Emulation is the client a skip under emulation names in the skip log.
const Emulation = "(emulation)"

// SkipEmulated skips t, with one line naming the emulator and why the test
// cannot run under it, when an emulator runs this process; the skip log
// gets the line too.
func SkipEmulated(t testing.TB, why string) {
	t.Helper()
	if e := Emulator(); e != "" {
		if err := LogSkip(t.Name(), Emulation, why, "runs on a real aarch64 kernel"); err != nil {
			t.Errorf("%s: %v", SkipLogEnv, err)
		}
		t.Skipf("under emulation (%s): %s", filepath.Base(e), why)
	}
}

// LogSkip appends one line to the skip log named by $DRAMA_SKIP_LOG (make
// test and make test-arm64 print it at their end; nothing when unset): the package (its directory,
// relative to the module root), the test, the client, why it is missing and
// the fix, tab-separated. Test binaries of several packages append to the
// same file at once: each line is one write to a file opened for appending.
func LogSkip(test, client, why, fix string) error {
	name := os.Getenv(SkipLogEnv)
	if name == "" {
		return nil
	}
	pkg := "."
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				if rel, err := filepath.Rel(dir, wd); err == nil {
					pkg = filepath.ToSlash(filepath.Join(".", rel))
					if pkg != "." {
						pkg = "./" + pkg
					}
				}
				break
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	clean := func(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }
	line := strings.Join([]string{clean(pkg), clean(test), clean(client), clean(why), clean(fix)}, "\t") + "\n"
	fh, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := fh.WriteString(line); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
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
