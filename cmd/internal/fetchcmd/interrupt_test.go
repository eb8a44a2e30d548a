package fetchcmd_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

// An interrupted fetch exits 130 and says that the same command resumes,
// with the command's own flags.
func TestInterruptedFetchSaysTheSameCommandResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs drama fetch as a subprocess")
	}
	dir := t.TempDir()
	data := bytes.Repeat([]byte("drama "), 4<<20)
	fp := filepath.Join(dir, "mirror", "fishaudio", "drama-3", killCommit, "model.safetensors")
	os.MkdirAll(filepath.Dir(fp), 0o755)
	os.WriteFile(fp, data, 0o644)
	sum := sha256.Sum256(data)
	p := &pins.Pins{Format: pins.Format, Variant: "full", Repo: "fishaudio/drama-3", RepoType: "model", Revision: killCommit,
		License: "Test Licence", Engine: "cuda", Files: []pins.File{{Path: "model.safetensors", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), LFS: true}}}
	pinsPath := filepath.Join(dir, "pins.json")
	p.WriteFile(pinsPath)
	srv := &mirror.Server{Source: mirror.DirSource{Dir: filepath.Join(dir, "mirror")}}
	srv.BytesPerSec = 1 << 20
	ts := httptest.NewServer(srv)
	defer ts.Close()
	root := filepath.Join(dir, "root")
	cmd := exec.Command(os.Args[0], "fetch", "--root", root, "--pins", pinsPath, "--endpoint", ts.URL, "--workers", "2", "--accept-license")
	cmd.Env = append(os.Environ(), "DRAMA_FETCHCMD_TEST_MAIN=1", "HF_HUB_CACHE="+filepath.Join(dir, "cache"), "HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for srv.Stats().BytesServed < 1<<20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
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
	for _, flag := range []string{"--root " + root, "--pins " + pinsPath, "--endpoint " + ts.URL, "--workers 2", "--accept-license"} {
		if !strings.Contains(last, flag) {
			t.Errorf("hint %q: want %q", last, flag)
		}
	}
}
