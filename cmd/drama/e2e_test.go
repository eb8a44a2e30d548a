package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/internal/emutest"
	"github.com/drama-tts/drama/internal/proc"
)

// The end-to-end tests build the real binaries (drama, drama-engine-cuda
// with its checksum file, and the stand-in native server) and run them as
// an operator would.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func binaries(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	buildOnce.Do(func() {
		// DRAMA_TEST_BIN names a directory of binaries built before (for a
		// host without Go): drama, drama-engine-cuda and tensorfold-standin.
		if dir := os.Getenv("DRAMA_TEST_BIN"); dir != "" {
			binDir, buildErr = dir, exec.Command("sh", "-c", "cd "+dir+" && sha256sum drama-engine-cuda > drama-engine-cuda.sha256").Run()
			return
		}
		binDir, buildErr = os.MkdirTemp("", "drama-e2e-bin-")
		if buildErr != nil {
			return
		}
		for _, b := range [][2]string{
			{"drama", "github.com/drama-tts/drama/cmd/drama"},
			{"drama-engine-cuda", "github.com/drama-tts/drama/plugins/cuda"},
			{"tensorfold-standin", "github.com/drama-tts/drama/engine/native/standin/cmd/tensorfold-standin"},
		} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, b[0]), b[1]).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("build %s: %v\n%s", b[0], err, out)
				return
			}
		}
		buildErr = exec.Command("sh", "-c", "cd "+binDir+" && sha256sum drama-engine-cuda > drama-engine-cuda.sha256").Run()
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" && os.Getenv("DRAMA_TEST_BIN") == "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type server struct {
	cmd    *exec.Cmd
	url    string
	stderr *enginetest.Buffer
	done   chan error
	exited chan struct{} // closed once the process has been waited for
}

// watch returns the server of a started drama serve and waits for its
// process in the background: done gets the exit error once, exited is
// closed for every later look.
func watch(cmd *exec.Cmd, url string, stderr *enginetest.Buffer) *server {
	s := &server{cmd: cmd, url: url, stderr: stderr, done: make(chan error, 1), exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		close(s.exited)
		s.done <- err
	}()
	return s
}

// startServe runs drama serve on the stand-in and waits until it is ready.
func startServe(t testing.TB, extra ...string) *server {
	t.Helper()
	return startServeEnv(t, nil, extra...)
}

// startServeEnv is startServe with extra environment variables (the
// stand-in's pacing and faults), on a fresh root holding an empty variant.
func startServeEnv(t testing.TB, env []string, extra ...string) *server {
	t.Helper()
	return launchServe(t, "", variantRoot(t), env, extra...)
}

// variantRoot returns a fresh root holding an empty directory of the full
// variant: enough for drama serve on the stand-in, which loads no model.
func variantRoot(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// launchServe runs drama serve from the drama binary at drama (the one
// built from this tree when empty) on the stand-in, with root as its root
// and env added, waits until it is ready, and stops it when the test ends.
func launchServe(t testing.TB, drama, root string, env []string, extra ...string) *server {
	t.Helper()
	bin := binaries(t)
	if drama == "" {
		drama = filepath.Join(bin, "drama")
	}
	addr := freeAddr(t)
	args := append([]string{"serve", "--root", root, "--plugin-dir", bin, "--engine-bin", filepath.Join(bin, "tensorfold-standin"),
		"--addr", addr, "--admission", "off", "--grace", "3s"}, extra...)
	cmd := exec.Command(drama, args...)
	cmd.Env = append(append(os.Environ(), "TENSORFOLD_STANDIN_LOAD_TIME=50ms"), env...)
	stderr := &enginetest.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := watch(cmd, "http://"+addr, stderr)
	t.Cleanup(func() { s.stop(t) })
	deadline := time.Now().Add(emutest.Scale(30 * time.Second))
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.url + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("drama serve exited: %v\n%s", err, s.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("drama serve not ready in %s\n%s", emutest.Scale(30*time.Second), s.stderr)
	return nil
}

func (s *server) stop(t testing.TB) {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(emutest.Scale(15 * time.Second)):
		s.cmd.Process.Kill()
		t.Errorf("drama serve did not stop within %s of SIGTERM\n%s", emutest.Scale(15*time.Second), s.stderr)
	}
}

func speak(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, nil // a stream cut short
	}
	return resp, data
}

func TestServeAndSay(t *testing.T) {
	s := startServe(t)
	out := filepath.Join(t.TempDir(), "hello.wav")
	say := exec.Command(filepath.Join(binaries(t), "drama"), "say", "Hello from drama.", "-o", out, "--server", s.url)
	if msg, err := say.CombinedOutput(); err != nil || !strings.Contains(string(msg), "real-time factor") {
		t.Fatalf("drama say: %v\n%s", err, msg)
	}
	if st, err := os.Stat(out); err != nil || st.Size() <= 44 {
		t.Fatalf("no WAV written: %v", err)
	}

	whole, wav := speak(t, s.url, `{"input":"Whole and streamed agree.","response_format":"pcm","stream":false}`)
	streamed, pcm := speak(t, s.url, `{"input":"Whole and streamed agree.","response_format":"pcm","stream":true}`)
	if whole.StatusCode != 200 || streamed.StatusCode != 200 || len(wav) == 0 || !bytes.Equal(wav, pcm) {
		t.Fatalf("whole %d (%d bytes) vs streamed %d (%d bytes)", whole.StatusCode, len(wav), streamed.StatusCode, len(pcm))
	}
	if whole.Header.Get("X-Finish-Reason") != "stop" || streamed.Trailer.Get("X-Finish-Reason") != "stop" || whole.Header.Get("X-Sample-Rate") != "44100" {
		t.Fatalf("finish reason: header %q trailer %q", whole.Header.Get("X-Finish-Reason"), streamed.Trailer.Get("X-Finish-Reason"))
	}
	if r, _ := speak(t, s.url, `{"input":"too fast","speed":2}`); r.StatusCode != 400 {
		t.Fatalf("speed 2: %d", r.StatusCode)
	}
}

func TestServeConcurrentClients(t *testing.T) {
	s := startServe(t, "--max-queue", "100")
	const clients = 100
	var wg sync.WaitGroup
	codes := make([]int, clients)
	for i := range clients {
		wg.Go(func() {
			r, body := speak(t, s.url, fmt.Sprintf(`{"input":"client number %d"}`, i))
			if body == nil {
				codes[i] = -1
				return
			}
			codes[i] = r.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("client %d: status %d\n%s", i, c, s.stderr)
		}
	}
}

func TestServeEngineCrashRecovery(t *testing.T) {
	s := startServe(t)
	r, _ := speak(t, s.url, `{"input":"this one crashes [standin:crash] the engine","stream":true,"response_format":"pcm"}`)
	if r.StatusCode == 200 && r.Trailer.Get("X-Finish-Reason") != "" {
		t.Fatal("the crashed synthesis looked complete")
	}
	var last int
	if !enginetest.Within(30*time.Second, func() bool {
		r, body := speak(t, s.url, `{"input":"after the crash"}`)
		last = r.StatusCode
		return r.StatusCode == 200 && len(body) > 44
	}) {
		t.Fatalf("no recovery in 30 s: last status %d\n%s", last, s.stderr)
	}
	resp, err := http.Get(s.url + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Restarts int }
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Restarts < 1 {
		t.Fatalf("restarts = %d after a crash", st.Restarts)
	}
}

func TestServeSIGTERMLeavesNoProcess(t *testing.T) {
	s := startServe(t)
	if r, _ := speak(t, s.url, `{"input":"one request first"}`); r.StatusCode != 200 {
		t.Fatal(r.Status)
	}
	if running := processesRunning(t, binDir); len(running) < 3 {
		t.Fatalf("want drama, its plugin and the native server running, found %q", running)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("drama serve exited with %v after SIGTERM\n%s", err, s.stderr)
		}
	case <-time.After(emutest.Scale(15 * time.Second)):
		t.Fatal("drama serve did not exit after SIGTERM")
	}
	var left []string
	if !enginetest.Within(2*time.Second, func() bool { left = processesRunning(t, binDir); return len(left) == 0 }) {
		t.Fatalf("processes left after SIGTERM: %s", strings.Join(left, "; "))
	}
}

// processesRunning lists the command lines of live processes started from a
// binary under dir, read from /proc. Under emulation the kernel runs each
// binary as an argument of the emulator, which comes first in its command
// line and is left out here.
func processesRunning(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(paths) == 0 {
		t.Fatalf("cannot list processes in /proc: %v", err)
	}
	emulator := emutest.Emulator()
	var left []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if emulator != "" {
			data = bytes.TrimPrefix(data, []byte(emulator+"\x00"))
		}
		if err != nil || !bytes.HasPrefix(data, []byte(dir)) {
			continue // gone meanwhile, or not ours
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if st, err := proc.Read(pid); err == nil && st.Exited() {
			continue // a zombie has exited; its parent has not reaped it yet
		}
		left = append(left, strings.ReplaceAll(string(bytes.TrimRight(data, "\x00")), "\x00", " "))
	}
	return left
}

func TestServeRefusesNonLoopback(t *testing.T) {
	bin := binaries(t)
	cmd := exec.Command(filepath.Join(bin, "drama"), "serve", "--addr", "0.0.0.0:8793")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "--allow-remote") {
		t.Fatalf("exit %d (%v): %s", code, err, out)
	}
}
