package servecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine/native"
)

// checkFixture is a root with the full variant installed, a fake engine
// binary (not the stand-in) and a voices directory holding one voice.
func checkFixture(t *testing.T) (root, bin, voicesDir string) {
	t.Helper()
	root = t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "full", "config.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(t.TempDir(), "tensorfold-native")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	voicesDir = t.TempDir()
	data, err := os.ReadFile("../../../voices/testdata/cuda.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(voicesDir, "fixture.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return root, bin, voicesDir
}

// runServeArgs runs drama serve's command line up to the engine's start:
// every case here must fail before a plugin is opened (the plugin given is
// a path that does not exist, so getting further fails differently).
func runServeArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ios, _, _, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	cmd := NewCmd(f, nil)
	root := cmdtest.NewRoot(f, cmd)
	err := cmdtest.Execute(root, append([]string{"serve"}, args...)...)
	return errOut.String(), err
}

func TestServeChecksBeforeTheEngine(t *testing.T) {
	root, bin, voicesDir := checkFixture(t)
	empty := t.TempDir()
	plugin := filepath.Join(t.TempDir(), "drama-engine-cuda") // never reached
	base := []string{"--engine", plugin, "--engine-bin", bin, "--addr", "127.0.0.1:0"}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"variant not installed", []string{"--root", empty, "--variant", "nvfp4"}, cmdutil.ExitFailure,
			fmt.Sprintf("nvfp4 is not installed in %s: run drama fetch --variant nvfp4 --root %s", empty, empty)},
		{"voices directory missing", []string{"--root", root, "--voices", filepath.Join(root, "nope-dir")}, cmdutil.ExitUsage,
			"nope-dir: no such directory"},
		{"voices is a file", []string{"--root", root, "--voices", bin}, cmdutil.ExitUsage, "not a directory"},
		{"voice store missing", []string{"--root", root, "--voice-store", filepath.Join(root, "unmounted")}, cmdutil.ExitUsage,
			"--voice-store " + filepath.Join(root, "unmounted") + ": no such directory: mount the file system the hosts share there"},
		{"voice store is a file", []string{"--root", root, "--voice-store", bin}, cmdutil.ExitUsage, "--voice-store " + bin + ": not a directory"},
		{"voice store rescan 0", []string{"--root", root, "--voice-store-rescan", "0s"}, cmdutil.ExitUsage, "--voice-store-rescan must be more than 0, e.g. 2s"},
		{"default voice unknown", []string{"--root", root, "--voices", voicesDir, "--default-voice", "ghost"}, cmdutil.ExitUsage,
			"--default-voice ghost: not among the voices in " + voicesDir + " (fixture)"},
		{"default voice without voices", []string{"--root", root, "--default-voice", "ghost"}, cmdutil.ExitUsage,
			"--default-voice ghost: the engine has only the voices of --voices DIR"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stderr, err := runServeArgs(t, append(append([]string{}, base...), tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tt.want)
			}
			if got := cmdutil.ExitCode(err); got != tt.code {
				t.Errorf("exit code %d, want %d (%v)", got, tt.code, err)
			}
			if strings.Count(err.Error()+stderr, "run drama") > 1 || strings.Contains(stderr, "engine") {
				t.Errorf("want one message before any engine line; err %q stderr %q", err, stderr)
			}
		})
	}
}

func TestServeUnknownEngineIsAUsageErrorWithOneHint(t *testing.T) {
	root, bin, _ := checkFixture(t)
	_, err := runServeArgs(t, "--root", root, "--engine", "cuda2", "--engine-bin", bin, "--plugin-dir", t.TempDir())
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Fatalf("exit code %d, want 2: %v", cmdutil.ExitCode(err), err)
	}
	msg := err.Error()
	if !strings.Contains(msg, `--engine "cuda2"`) || !strings.Contains(msg, "want cuda, metal, or a plugin binary's path") || strings.Count(msg, "make build") > 1 {
		t.Fatalf("err = %v", err)
	}
}

func TestServeNamesTheDramaServeAlreadyOnTheRoot(t *testing.T) {
	root, bin, _ := checkFixture(t)
	other := os.Getppid() // a live process that is not this one
	if _, err := serverec.Write(root, serverec.Record{PID: other, Addr: "127.0.0.1:8793", Variant: "full", Root: root, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	_, err := runServeArgs(t, "--root", root, "--engine", filepath.Join(t.TempDir(), "drama-engine-cuda"), "--engine-bin", bin)
	want := fmt.Sprintf("drama serve (pid %d, http://127.0.0.1:8793, variant full", other)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "another --root") || strings.Contains(err.Error(), "runtime directory") {
		t.Fatalf("err = %v, want it to name %q", err, want)
	}
}

func TestAdmissionHintRepeatsTheFlags(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = "/srv/drama root"
	opts := &Options{F: f, Given: []string{"--engine-bin", "./bin/tensorfold-native", "--addr", "127.0.0.1:9000", "--root", "/srv/drama root"}}
	refused := errors.New("engine: start: " + native.ErrMemory.Error() + " to load the engine: want 42.0 GiB")
	got := admissionHint(f, opts, refused).Error()
	for _, want := range []string{
		"drama serve --engine-bin ./bin/tensorfold-native --addr 127.0.0.1:9000 --root '/srv/drama root' --admission external",
		"drama serve --engine-bin ./bin/tensorfold-native --addr 127.0.0.1:9000 --root '/srv/drama root' --admission off",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("hint %q\nwant it to contain %q", got, want)
		}
	}
	if other := errors.New("engine: start: exited"); admissionHint(f, opts, other) != other {
		t.Error("only a refused admission gets the hint")
	}
}

func TestServeStandInNeedsNoInstallNorAdmission(t *testing.T) {
	bin := standInBinary(t)
	if !cmdutil.IsStandIn(bin) {
		t.Fatalf("IsStandIn(%s) = false", bin)
	}
	ios, _, _, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = t.TempDir() // nothing installed
	opts := &Options{F: f, Engine: filepath.Join(t.TempDir(), "drama-engine-cuda"), EngineBin: bin, Addr: "127.0.0.1:0", Admission: "own",
		Listening: func(string) {}}
	req, err := startRequest(f, opts, f.Global.Root)
	if err != nil {
		t.Fatal(err)
	}
	if !cmdutil.IsStandIn(req.EngineBin) {
		t.Fatal("the start request must carry the stand-in")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// With a cancelled context the run gets as far as opening the plugin,
	// which does not exist: past the install check and the admission.
	err = run(ctx, opts)
	if err != nil && strings.Contains(err.Error(), "not installed") {
		t.Fatalf("the stand-in loads no model: %v", err)
	}
	if !strings.Contains(errOut.String(), "the engine binary is the stand-in: it loads no model, so memory admission is off") {
		t.Fatalf("stderr %q: want the admission turned off for the stand-in", errOut)
	}
}

// standInBinary builds the stand-in native engine once per test binary.
func standInBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the stand-in")
	}
	standInOnce.Do(func() {
		dir, err := os.MkdirTemp("", "servecmd-standin-")
		if err != nil {
			standInErr = err
			return
		}
		standInPath = filepath.Join(dir, "tensorfold-standin")
		out, err := exec.Command("go", "build", "-o", standInPath, cmdutil.StandInPackage).CombinedOutput()
		if err != nil {
			standInErr = fmt.Errorf("build the stand-in: %v\n%s", err, out)
		}
	})
	if standInErr != nil {
		t.Fatal(standInErr)
	}
	return standInPath
}

var (
	standInOnce sync.Once
	standInPath string
	standInErr  error
)

func TestIsStandInReadsTheBinary(t *testing.T) {
	_, fake, _ := checkFixture(t)
	self, _ := os.Executable()
	for _, p := range []string{fake, self, filepath.Join(t.TempDir(), "missing"), ""} {
		if cmdutil.IsStandIn(p) {
			t.Errorf("IsStandIn(%q) = true", p)
		}
	}
}

// The curl examples of drama serve's help must work as written: a JSON
// body needs its Content-Type (else a 415), and --fail keeps an error
// answer from being saved as the audio file.
func TestServeHelpCurlExampleSendsJSONAndFails(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	cmd := NewCmd(cmdtest.Factory(ios), nil)
	n := 0
	for _, line := range strings.Split(cmd.Example, "\n") {
		if !strings.Contains(line, "curl ") {
			continue
		}
		n++
		if !strings.Contains(line, "--fail") || (strings.Contains(line, " -d ") && !strings.Contains(line, "-H 'Content-Type: application/json'")) {
			t.Errorf("example %q: want --fail and -H 'Content-Type: application/json'", line)
		}
	}
	if n == 0 {
		t.Fatal("no curl example in drama serve --help")
	}
}
