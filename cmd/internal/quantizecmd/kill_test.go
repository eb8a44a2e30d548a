package quantizecmd_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cli"
	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/safetensors/quant"
)

// TestMain lets the test binary act as drama itself, so a test can run a
// real `drama quantize` process and kill it.
func TestMain(m *testing.M) {
	if os.Getenv("DRAMA_QUANTIZECMD_TEST_MAIN") == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

// TestKill9LeavesNoTemporary SIGKILLs a drama quantize while it writes its
// output directory, runs it again, and checks that the second run removed
// what the first left and finished the output.
func TestKill9LeavesNoTemporary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs drama quantize twice as a subprocess")
	}
	in := t.TempDir()
	if err := (quant.SyntheticCheckpoint{Layers: 4, Experts: 16, Hidden: 512, Inter: 256}).Write(in); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "nv")
	run := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "quantize", in, "-o", out, "--to", "nvfp4", "--workers", "1", "--json")
		cmd.Env = append(os.Environ(), "DRAMA_QUANTIZECMD_TEST_MAIN=1", "HOME="+parent)
		return cmd
	}
	var left []atomicfile.Temp
	for try := 0; try < 5 && len(left) == 0; try++ {
		first := run()
		var stderr bytes.Buffer
		first.Stderr = &stderr
		if err := first.Start(); err != nil {
			t.Fatal(err)
		}
		prefix := ".nv" + atomicfile.Marker + strconv.Itoa(first.Process.Pid) + "-"
		deadline := time.Now().Add(30 * time.Second)
		for seen := false; !seen && time.Now().Before(deadline); {
			ents, _ := os.ReadDir(parent)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), prefix) {
					seen = true
				}
			}
			if _, err := os.Stat(out); err == nil {
				break // finished before it could be caught: try again
			}
		}
		first.Process.Signal(syscall.SIGKILL)
		first.Wait()
		left, _ = atomicfile.Find(parent, "nv")
		if len(left) == 0 {
			os.RemoveAll(out)
		}
	}
	if len(left) == 0 {
		t.Fatal("never caught drama quantize while it wrote; the checkpoint is too small for this machine")
	}
	t.Logf("the killed run left %s", filepath.Base(left[0].Path))
	if outp, err := run().CombinedOutput(); err != nil {
		t.Fatalf("rerun: %v\n%s", err, outp)
	}
	if left, _ := atomicfile.Find(parent, ""); len(left) != 0 {
		t.Errorf("after the rerun %s is still there", left[0].Path)
	}
	if _, err := os.Stat(filepath.Join(out, "model.safetensors.index.json")); err != nil {
		t.Errorf("the rerun's output: %v", err)
	}
}
