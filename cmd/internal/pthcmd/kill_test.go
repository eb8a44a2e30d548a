package pthcmd_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cli"
	"github.com/drama-tts/drama/internal/atomicfile"
)

// TestMain lets the test binary act as drama itself, or as a writer that
// stops halfway through writing a file (DRAMA_PTHCMD_TEST_HOLD names it),
// so a test can kill either.
func TestMain(m *testing.M) {
	if os.Getenv("DRAMA_PTHCMD_TEST_MAIN") == "1" {
		os.Exit(cli.Main())
	}
	if p := os.Getenv("DRAMA_PTHCMD_TEST_HOLD"); p != "" {
		atomicfile.Write(p, 0, func(f *os.File) error {
			f.Write(make([]byte, 1<<20))
			os.Stdout.WriteString("writing\n")
			select {} // killed here
		})
	}
	os.Exit(m.Run())
}

// TestKill9ConvertLeavesNoTemporary SIGKILLs a process while it writes
// OUT.safetensors, then runs drama pth convert into the same file and checks
// that no temporary is left.
func TestKill9ConvertLeavesNoTemporary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs subprocesses")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "o.safetensors")
	w := exec.Command(os.Args[0])
	w.Env = append(os.Environ(), "DRAMA_PTHCMD_TEST_HOLD="+out)
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "writing\n" {
		w.Process.Kill()
		t.Fatalf("the writer said %q, %v", line, err)
	}
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()
	if left, _ := atomicfile.Find(dir, "o.safetensors"); len(left) != 1 {
		t.Fatalf("the killed writer left %v; want its one temporary", left)
	}
	c := exec.Command(os.Args[0], "pth", "convert", "../../../pth/testdata/casts.pth", "-o", out)
	c.Env = append(os.Environ(), "DRAMA_PTHCMD_TEST_MAIN=1", "HOME="+dir)
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("drama pth convert: %v\n%s", err, b)
	}
	if left, _ := atomicfile.Find(dir, ""); len(left) != 0 {
		t.Errorf("after drama pth convert %s is still there", left[0].Path)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error(err)
	}
}
