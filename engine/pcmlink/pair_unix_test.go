//go:build unix

package pcmlink

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

func cloexec(t *testing.T, fd uintptr) bool {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFD, 0)
	if errno != 0 {
		t.Fatalf("fcntl(%d): %v", fd, errno)
	}
	return flags&syscall.FD_CLOEXEC != 0
}

func TestPairEndsAreCloseOnExec(t *testing.T) {
	r, f, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer f.Close()
	if !cloexec(t, f.Fd()) {
		t.Error("the plugin's end would reach every child the host starts")
	}
}

// TestHandedDownLinkWorks runs the plugin's side in a child process given
// the link as exec does it (ExtraFiles, EnvFD): the child takes it from
// its environment, checks that it is close-on-exec and gone from the
// environment, and sends audio the host reads.
func TestHandedDownLinkWorks(t *testing.T) {
	if os.Getenv("PCMLINK_CHILD") == "1" {
		child()
		return
	}
	r, f, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rd := r.Open()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHandedDownLinkWorks$")
	cmd.Env = append(os.Environ(), "PCMLINK_CHILD=1", EnvFD+"=3", "PCMLINK_ID="+strconv.FormatUint(rd.ID(), 10))
	cmd.ExtraFiles = []*os.File{f}
	out, err := cmd.CombinedOutput()
	f.Close()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got, err := readAll(t, rd)
	if !errors.Is(err, io.EOF) || !bytes.Equal(got, []byte("audio from the plugin")) {
		t.Fatalf("got %q, %v\n%s", got, err, out)
	}
}

func child() {
	fail := func(msg string) { os.Stderr.WriteString(msg + "\n"); os.Exit(2) }
	s, err := FromEnv()
	if err != nil || s == nil {
		fail("FromEnv: " + func() string {
			if err != nil {
				return err.Error()
			}
			return "no link"
		}())
	}
	if _, ok := os.LookupEnv(EnvFD); ok {
		fail(EnvFD + " still set: the engine process would see it")
	}
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/self/fd/3"); err == nil {
			fail("descriptor 3 still open after FromEnv: the engine process would inherit it")
		}
	}
	id, _ := strconv.ParseUint(os.Getenv("PCMLINK_ID"), 10, 64)
	w, ok := s.Take(id)
	if !ok {
		fail("Take refused")
	}
	if err := w.Write([]byte("audio from the plugin"), false); err != nil {
		fail(err.Error())
	}
	w.End(nil)
	w.Release()
	s.Close()
	os.Exit(0)
}
