package native_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/standin"
)

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func skipUnsupported(t testing.TB) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("supervision needs Linux or macOS")
	}
}

// launchConfig returns a config starting the stand-in as the CUDA server
// for nvfp4, with env added to its environment.
func launchConfig(t *testing.T, env ...string) native.Config {
	dir := t.TempDir()
	port := freePort(t)
	args := native.CUDA.ServeArgs(native.ServeOptions{Port: port, Variant: "nvfp4"})
	return native.Config{
		Binary: standinBin, Args: args, Port: port,
		Env:          native.Environ(os.Environ(), append([]string{"TENSORFOLD_STANDIN_LOAD_TIME=200ms"}, env...)...),
		LogPath:      filepath.Join(dir, "engine.log"),
		RuntimeFile:  filepath.Join(dir, "engine.json"),
		ReadyTimeout: 20 * time.Second,
	}
}

func TestLaunchReadyAndStop(t *testing.T) {
	skipUnsupported(t)
	cfg := launchConfig(t, "TENSORFOLD_STANDIN_LOAD_TIME=800ms") // long enough for progress to show under load
	var phases []engine.Phase
	sawProgress := false
	cfg.Events = func(e engine.LifecycleEvent) {
		phases = append(phases, e.Phase)
		if e.Phase == engine.PhaseLoading && e.Progress >= 0 {
			sawProgress = true
		}
	}
	p, err := native.Launch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if phases[0] != engine.PhaseSpawned || phases[len(phases)-1] != engine.PhaseReady || !sawProgress {
		t.Errorf("phases %v (progress %v): want spawned, loading with progress, ready", phases, sawProgress)
	}
	rec, err := native.ReadRuntimeFile(cfg.RuntimeFile)
	if err != nil || rec.PID != p.PID() || rec.Port != cfg.Port {
		t.Errorf("runtime record %+v, %v: want pid %d port %d", rec, err, p.PID(), cfg.Port)
	}
	if err := native.NewClient(p.Addr()).Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	exit, killed := p.Stop(5 * time.Second)
	if killed || exit == nil || exit.Code != 0 || !exit.Stopped {
		t.Errorf("stop: exit %+v killed %v: want a clean exit on SIGTERM", exit, killed)
	}
	if _, err := os.Stat(cfg.RuntimeFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("runtime file after stop: %v", err)
	}
	if alive(p.PID()) {
		t.Errorf("pid %d still alive after stop", p.PID())
	}
	log, _ := os.ReadFile(cfg.LogPath)
	for _, want := range []string{"--cfg-gamma 1.5 --cfg-batched", "--parallel 1", "ready", "standin: SIGTERM: shutting down"} {
		if !strings.Contains(string(log), want) && !strings.Contains(string(log), strings.ToLower(want)) {
			t.Errorf("engine log lacks %q:\n%s", want, log)
		}
	}
}

func TestLaunchExitIsAnError(t *testing.T) {
	skipUnsupported(t)
	cfg := launchConfig(t, fault("crash-on-start"))
	_, err := native.Launch(context.Background(), cfg)
	var ee *native.ExitError
	if !errors.As(err, &ee) || ee.Code != 70 || !strings.Contains(ee.Tail, "out of memory") {
		t.Fatalf("err %v: want an exit with code 70 and the output tail", err)
	}
	if !strings.Contains(err.Error(), "out of memory") {
		t.Errorf("message %q: want the last output lines", err)
	}
}

func TestLaunchStallAndDeadline(t *testing.T) {
	skipUnsupported(t)
	cfg := launchConfig(t, fault("hang-on-start"))
	cfg.StallTimeout = 400 * time.Millisecond
	if _, err := native.Launch(context.Background(), cfg); !errors.Is(err, native.ErrStalled) {
		t.Errorf("hang: err %v, want ErrStalled", err)
	}
	cfg = launchConfig(t, "TENSORFOLD_STANDIN_LOAD_TIME=30s")
	cfg.ReadyTimeout = 300 * time.Millisecond
	start := time.Now()
	if _, err := native.Launch(context.Background(), cfg); !errors.Is(err, native.ErrReadyTimeout) {
		t.Errorf("slow: err %v, want ErrReadyTimeout", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("a failed launch took %s to stop the engine", time.Since(start))
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	skipUnsupported(t)
	cfg := launchConfig(t, fault("ignore-sigterm"))
	p, err := native.Launch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	exit, killed := p.Stop(300 * time.Millisecond)
	if !killed || exit.Signal != "SIGKILL" {
		t.Errorf("exit %+v killed %v: want SIGKILL after the grace period", exit, killed)
	}
	if msg := exit.Error(); !strings.HasPrefix(msg, "native: engine was killed by SIGKILL") || !strings.Contains(msg, "standin: ignoring SIGTERM") {
		t.Errorf("the exit reads %q: want it to name the signals as SIGKILL and SIGTERM", msg)
	}
}

func TestCrashDuringSynthesis(t *testing.T) {
	skipUnsupported(t)
	p, err := native.Launch(context.Background(), launchConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	c := native.NewClient(p.Addr())
	_, err = c.Synthesize(context.Background(), &native.SpeechRequest{Input: "die [standin:crash]", Stream: true, ResponseFormat: "pcm"},
		func([]byte) error { return nil })
	if !errors.Is(err, native.ErrTruncated) {
		t.Errorf("err %v: want ErrTruncated", err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the engine did not exit")
	}
	if e := p.Exit(); e == nil || e.Code != 70 || e.Stopped || !strings.Contains(e.Tail, "simulated crash") {
		t.Errorf("exit %+v: want code 70 with its output", e)
	}
}

func fault(name string) string { return standin.EnvFault + "=" + name }

// TestLaunchRetriesTakenPort: a port taken between its choice and the
// server's bind makes the server exit; the launch tries another port.
func TestLaunchRetriesTakenPort(t *testing.T) {
	skipUnsupported(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := launchConfig(t)
	taken := ln.Addr().(*net.TCPAddr).Port
	cfg.Port, cfg.Args = taken, native.CUDA.ServeArgs(native.ServeOptions{Port: taken})
	p, err := native.LaunchRetryingPort(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	if p.Addr() == ln.Addr().String() {
		t.Errorf("engine at %s: want another port than the taken one", p.Addr())
	}
	if err := native.NewClient(p.Addr()).Health(context.Background()); err != nil {
		t.Error(err)
	}
}
