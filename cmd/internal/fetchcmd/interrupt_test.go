package fetchcmd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
)

// An interrupted fetch exits 130 and says that the same command resumes,
// with the command's own flags.
func TestInterruptedFetchSaysTheSameCommandResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs drama fetch as a subprocess")
	}
	dir := t.TempDir()
	data := bytes.Repeat([]byte("drama "), 4<<20)
	srv, pinsPath, url := killMirror(t, dir, data, 1<<20)
	root := filepath.Join(dir, "root")
	cmd := exec.Command(os.Args[0], "fetch", "--root", root, "--pins", pinsPath, "--endpoint", url, "--workers", "2", "--accept-license")
	cmd.Env = append(os.Environ(), "DRAMA_FETCHCMD_TEST_MAIN=1", "HF_HUB_CACHE="+filepath.Join(dir, "cache"), "HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !enginetest.Within(30*time.Second, func() bool { return srv.Stats().BytesServed >= 1<<20 }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the fetch took %d bytes in 30 s, want 1 MiB before the interrupt\n%s", srv.Stats().BytesServed, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var x *exec.ExitError
	if !errors.As(err, &x) || x.ExitCode() != 130 {
		t.Fatalf("want exit 130, got %v\n%s", err, stderr.String())
	}
	var last string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		last = line
	}
	if !strings.HasPrefix(last, "drama: interrupted: verified files are kept and partial downloads resume: run the same command again: drama fetch ") {
		t.Fatalf("last line %q\nstderr:\n%s", last, stderr.String())
	}
	for _, flag := range []string{"--root " + root, "--pins " + pinsPath, "--endpoint " + url, "--workers 2", "--accept-license"} {
		if !strings.Contains(last, flag) {
			t.Errorf("hint %q: want %q", last, flag)
		}
	}
}
