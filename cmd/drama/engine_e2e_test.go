package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/build/buildtest"
	"github.com/drama-tts/drama/engine/enginetest"
)

// TestEngineInstallThenServe builds the engine from fixture upstreams with
// drama engine install (the fixture's build installs the stand-in server),
// serves speech through it with no --engine-bin, then changes the binary:
// drama engine verify exits 3 and drama serve refuses to start it.
func TestEngineInstallThenServe(t *testing.T) {
	bin := binaries(t)
	fx := buildtest.New(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "full"), 0o755)
	data, err := fx.Sources(t, fx.Good).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sources := filepath.Join(t.TempDir(), "sources.json")
	os.WriteFile(sources, data, 0o644)
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, buildtest.EngineEnv+"="+filepath.Join(bin, "tensorfold-standin"),
		"TENSORFOLD_STANDIN_LOAD_TIME=50ms")
	drama := func(args ...string) (int, string) {
		cmd := exec.Command(filepath.Join(bin, "drama"), append([]string{"--root", root}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := drama("engine", "install", "--sources", sources, "--source", fx.Mirror, "--zig", fx.Zig, "--nvcc", fx.NVCC); code != 0 {
		t.Fatalf("engine install: exit %d\n%s", code, out)
	}

	addr := freeAddr(t)
	cmd := exec.Command(filepath.Join(bin, "drama"), "serve", "--root", root, "--plugin-dir", bin, "--addr", addr, "--admission", "off", "--grace", "3s")
	cmd.Env = env
	var stderr enginetest.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := watch(cmd, "http://"+addr, &stderr)
	defer s.stop(t)
	ready := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !ready; {
		if resp, err := http.Get(s.url + "/ready"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == 200
		}
		select {
		case err := <-s.done:
			t.Fatalf("drama serve exited: %v\n%s", err, &stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !ready {
		t.Fatalf("drama serve on the installed engine not ready in 30 s\n%s", &stderr)
	}
	resp, body := speak(t, s.url, `{"input":"Built from pinned sources.","response_format":"wav"}`)
	if resp.StatusCode != 200 || !bytes.HasPrefix(body, []byte("RIFF")) {
		t.Fatalf("speech through the installed engine: %d %q", resp.StatusCode, body[:min(len(body), 200)])
	}
	s.stop(t)

	engineBin := filepath.Join(build.Dir(root, "full"), "tensorfold-native")
	f, err := os.OpenFile(engineBin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	if code, out := drama("engine", "verify"); code != 3 || !strings.Contains(out, "drama engine install --variant full") {
		t.Errorf("engine verify of a changed binary: exit %d\n%s", code, out)
	}
	code, out := drama("serve", "--plugin-dir", bin, "--addr", freeAddr(t), "--admission", "off")
	if code == 0 || !strings.Contains(out, engineBin+": sha256: want ") {
		t.Errorf("serve of a changed engine: exit %d\n%s", code, out)
	}
}

// TestEngineInstallSIGINTThenResume interrupts drama engine install in the
// middle of the build: it exits 130, the build is gone, nothing is
// recorded, and the next run builds again and installs.
func TestEngineInstallSIGINTThenResume(t *testing.T) {
	bin := binaries(t)
	fx := buildtest.New(t)
	root := t.TempDir()
	data, _ := fx.Sources(t, fx.Good).Marshal()
	sources := filepath.Join(t.TempDir(), "sources.json")
	os.WriteFile(sources, data, 0o644)
	pause := filepath.Join(t.TempDir(), "paused")
	args := []string{"--root", root, "engine", "install", "--sources", sources, "--source", fx.Mirror, "--zig", fx.Zig, "--nvcc", fx.NVCC}
	cmd := exec.Command(filepath.Join(bin, "drama"), args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, buildtest.PauseEnv+"="+pause)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if !enginetest.Within(60*time.Second, func() bool {
		b, err := os.ReadFile(pause)
		if err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err == nil
	}) {
		cmd.Process.Kill()
		t.Fatalf("the build never paused\n%s", &out)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("interrupted install: %v, want exit 130\n%s", err, &out)
	}
	if pid <= 0 || syscall.Kill(pid, 0) == nil {
		t.Errorf("the build (pid %d) is still running after the interrupt", pid)
	}
	if _, err := os.Stat(filepath.Join(build.Dir(root, "full"), build.SumsName)); !os.IsNotExist(err) {
		t.Fatalf("record after the interrupt: %v", err)
	}
	again := exec.Command(filepath.Join(bin, "drama"), args...)
	again.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull)
	res, err := again.CombinedOutput()
	if err != nil || !strings.Contains(string(res), "engine full: patch: skipped") || !strings.Contains(string(res), "engine full: build: 1 binaries") {
		t.Fatalf("resumed install: %v\n%s", err, res)
	}
}
