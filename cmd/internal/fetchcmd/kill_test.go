package fetchcmd_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cli"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub/hubtest"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

// TestMain lets the test binary act as drama itself, so a test can run a
// real `drama fetch` process and kill it.
func TestMain(m *testing.M) {
	if os.Getenv("DRAMA_FETCHCMD_TEST_MAIN") == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

const (
	killCommit  = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
	killWorkers = 4
	killChunk   = 1 << 20
)

// TestKill9Resume SIGKILLs a drama fetch mid-download, runs it again, and
// checks the file is right and the bytes fetched twice are at most
// workers x chunk size.
func TestKill9Resume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs drama fetch twice as a subprocess")
	}
	dir := t.TempDir()
	data := make([]byte, 24<<20)
	r := rand.New(rand.NewPCG(11, 13))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	srv, pinsPath, url := killMirror(t, dir, data, 2<<20) // per stream: 8 MiB/s over 4 streams, about 3 s in all

	run := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "fetch", "--root", filepath.Join(dir, "root"), "--pins", pinsPath, "--endpoint", url,
			"--workers", "4", "--chunk-size", "1", "--accept-license", "--json")
		cmd.Env = append(os.Environ(), "DRAMA_FETCHCMD_TEST_MAIN=1", "HF_HUB_CACHE="+filepath.Join(dir, "cache"), "HOME="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		return cmd
	}
	first := run()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	if !enginetest.Within(30*time.Second, func() bool { return srv.Stats().BytesServed >= int64(len(data))*2/5 }) {
		first.Process.Kill()
		first.Wait()
		t.Fatalf("the first fetch took %d bytes in 30 s, want two fifths of %d before the kill", srv.Stats().BytesServed, len(data))
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	servedFirst := srv.Stats().BytesServed
	sum := sha256.Sum256(data)
	blob := filepath.Join(dir, "cache", "models--fishaudio--drama-3", "blobs", hex.EncodeToString(sum[:]))
	if _, err := os.Stat(blob); err == nil {
		t.Fatal("the killed fetch left a file under its final name")
	}
	if _, err := os.Stat(blob + ".drama.incomplete.state"); err != nil {
		t.Fatalf("no resume state after kill: %v", err)
	}
	second := run()
	if out, err := second.Output(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "root", "full", "model.safetensors"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("resumed file differs: %v", err)
	}
	again := srv.Stats().BytesServed - int64(len(data))
	t.Logf("first run served %d bytes before SIGKILL; %d bytes were fetched twice", servedFirst, again)
	if again > killWorkers*killChunk {
		t.Errorf("fetched twice %d bytes, want at most workers x chunk = %d", again, killWorkers*killChunk)
	}
}

// killMirror serves data as model.safetensors of fishaudio/drama-3 at
// killCommit, an LFS file, from a loopback mirror under dir that sends
// bytesPerSec a stream, and writes its pins under dir. It returns the mirror,
// the pins file and the mirror's address.
func killMirror(t *testing.T, dir string, data []byte, bytesPerSec int64) (srv *mirror.Server, pinsPath, url string) {
	t.Helper()
	srv, url = hubtest.Mirror(t, filepath.Join(dir, "mirror"), "fishaudio/drama-3", killCommit, map[string][]byte{"model.safetensors": data}, 1)
	srv.BytesPerSec = bytesPerSec
	sum := sha256.Sum256(data)
	p := &pins.Pins{Format: pins.Format, Variant: "full", Repo: "fishaudio/drama-3", RepoType: "model", Revision: killCommit,
		License: "Test Licence", Engine: "cuda", Files: []pins.File{{Path: "model.safetensors", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), LFS: true}}}
	pinsPath = filepath.Join(dir, "pins.json")
	if err := p.WriteFile(pinsPath); err != nil {
		t.Fatal(err)
	}
	return srv, pinsPath, url
}
