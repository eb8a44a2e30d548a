//go:build unix

package native_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
)

// helperMain launches the stand-in under a supervisor, prints "pid N" and
// waits to be killed.
func helperMain() int {
	port, _ := strconv.Atoi(os.Getenv("NATIVE_TEST_PORT"))
	cfg := native.Config{
		Binary: os.Getenv("NATIVE_TEST_BIN"), Port: port,
		Args:        native.CUDA.ServeArgs(native.ServeOptions{Port: port}),
		Env:         native.Environ(os.Environ(), "TENSORFOLD_STANDIN_LOAD_TIME=50ms"),
		RuntimeFile: os.Getenv("NATIVE_TEST_RUNTIME"),
	}
	p, err := native.Launch(context.Background(), cfg)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Printf("pid %d\n", p.PID())
	select {}
}

// startHelper runs the test binary as a supervisor and returns it with the
// engine pid it launched.
func startHelper(t *testing.T, runtimeFile string) (*exec.Cmd, int) {
	t.Helper()
	cmd, line := nativetest.Reexec(t, helperEnv+"=1", "NATIVE_TEST_BIN="+standinBin,
		"NATIVE_TEST_PORT="+strconv.Itoa(freePort(t)), "NATIVE_TEST_RUNTIME="+runtimeFile)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", line)
	}
	return cmd, pid
}

// waitGone waits until pid no longer runs (enginetest.WaitFor's deadline);
// a pid that outlives it is killed and the test fails, saying what.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	gone := false
	defer func() {
		if !gone {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s: pid %d still runs", what, pid)
		}
	}()
	enginetest.WaitFor(t, func() bool { gone = !alive(pid); return gone })
}

// TestKill9LeavesNoOrphan kills the supervisor with SIGKILL: the parent-death
// signal must take the engine with it, every time.
func TestKill9LeavesNoOrphan(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	trials := 5
	if testing.Short() {
		trials = 2
	}
	for i := 0; i < trials; i++ {
		cmd, pid := startHelper(t, "")
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		waitGone(t, pid, fmt.Sprintf("trial %d: the engine outlived its killed supervisor", i))
	}
}

// TestLeftoverFoundAndStopped: the runtime file of a killed supervisor
// names its engine; StopLeftover stops it. (On Linux the parent-death
// signal already took it, so the engine is started here without one.)
func TestLeftoverFoundAndStopped(t *testing.T) {
	skipUnsupported(t)
	path := filepath.Join(t.TempDir(), "engine.json")
	cmd := startOrphanLike(t)
	writeRecordOf(t, path, cmd.Process.Pid, 0)
	left, err := native.StopLeftover(path, 2*time.Second)
	if err != nil || !left.Found || !left.Stopped {
		t.Fatalf("leftover %+v, %v: want found and stopped", left, err)
	}
	cmd.Wait()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("runtime file left: %v", err)
	}
}

// TestRecycledPIDNeverSignalled: a runtime record whose pid now belongs to
// another program, or to the same program started later, is not signalled.
func TestRecycledPIDNeverSignalled(t *testing.T) {
	skipUnsupported(t)
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	same := startOrphanLike(t)
	defer func() { same.Process.Kill(); same.Wait() }()
	for name, rec := range map[string]native.RuntimeRecord{
		"other program": recordOf(t, other.Process.Pid, 0),
		"later start":   recordOf(t, same.Process.Pid, 1),
	} {
		if name == "other program" {
			rec.Exe = recordOf(t, same.Process.Pid, 0).Exe
		}
		path := filepath.Join(t.TempDir(), "engine.json")
		if err := native.WriteRuntimeFile(path, rec); err != nil {
			t.Fatal(err)
		}
		left, err := native.StopLeftover(path, time.Second)
		if err != nil || !left.Found || left.Stopped || left.Reason == "" {
			t.Errorf("%s: leftover %+v, %v: want found, not stopped, with a reason", name, left, err)
		}
	}
	// A signal sent takes a moment to end its process: this pause is the
	// window in which a wrongly signalled one would be seen to end.
	time.Sleep(100 * time.Millisecond)
	if !alive(other.Process.Pid) || !alive(same.Process.Pid) {
		t.Error("a process with a recycled pid was signalled")
	}
}

func TestLeftoverFileMissingOrBroken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "engine.json")
	if left, err := native.StopLeftover(path, time.Second); err != nil || left.Found {
		t.Errorf("missing: %+v %v", left, err)
	}
	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, err := native.StopLeftover(path, time.Second); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("broken: %v, want an error naming the file", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("a broken runtime file was kept")
	}
}

// startOrphanLike starts the stand-in in its own process group without a
// parent-death signal, as a leftover from a crashed run would be.
func startOrphanLike(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(standinBin, native.CUDA.ServeArgs(native.ServeOptions{Port: freePort(t)})...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Until exec finishes the child is this test binary, its arguments
	// this test's. Its executable cannot tell under qemu-user (make
	// test-arm64), where it is the emulator's before and after; its
	// arguments can: the stand-in's path is one of them once exec is done
	// (the first, or after the emulator's own).
	enginetest.WaitFor(t, func() bool {
		args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		return err == nil && slices.Contains(strings.Split(string(args), "\x00"), standinBin)
	})
	return cmd
}

func recordOf(t *testing.T, pid int, startSkew uint64) native.RuntimeRecord {
	t.Helper()
	exe, start, err := native.ProcIdentity(pid)
	if err != nil {
		t.Fatal(err)
	}
	return native.RuntimeRecord{PID: pid, Exe: exe, StartTime: start + startSkew}
}

func writeRecordOf(t *testing.T, path string, pid int, skew uint64) {
	t.Helper()
	if err := native.WriteRuntimeFile(path, recordOf(t, pid, skew)); err != nil {
		t.Fatal(err)
	}
}

// TestLeftoverStillSupervised: an engine whose supervisor still runs is not
// a leftover: StopLeftover refuses and signals nothing.
func TestLeftoverStillSupervised(t *testing.T) {
	skipUnsupported(t)
	owner := exec.Command("sleep", "30")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { owner.Process.Kill(); owner.Wait() }()
	child := startOrphanLike(t)
	defer func() { child.Process.Kill(); child.Wait() }()
	rec := recordOf(t, child.Process.Pid, 0)
	o := recordOf(t, owner.Process.Pid, 0)
	rec.Owner, rec.OwnerStart = o.PID, o.StartTime
	path := filepath.Join(t.TempDir(), "engine.json")
	native.WriteRuntimeFile(path, rec)
	left, err := native.StopLeftover(path, time.Second)
	if !errors.Is(err, native.ErrInUse) || left.Stopped || !strings.Contains(err.Error(), "stop that one first") {
		t.Errorf("leftover %+v, %v: want ErrInUse", left, err)
	}
	if !alive(child.Process.Pid) {
		t.Error("a supervised engine was signalled")
	}
	owner.Process.Kill()
	owner.Wait()
	if left, err := native.StopLeftover(path, 2*time.Second); err != nil || !left.Stopped {
		t.Errorf("after its supervisor died: %+v, %v: want it stopped", left, err)
	}
}
