package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/build/buildtest"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub/hubtest"
)

const upCommit = "abababababababababababababababababababab"

// upFixture is what drama up needs to go from an empty root to speech
// with no network and no GPU: a local Hub holding a small variant, its
// pins, fixture engine sources whose build installs the stand-in, a
// fake nvidia-smi naming a GPU, and drama itself on the PATH (for the
// drama say line it prints).
type upFixture struct {
	bin, dir, root string
	args           []string
	env            []string
	served         func() int64
	model          []byte
	total          int64 // the pinned bytes
}

func newUpFixture(t *testing.T) *upFixture {
	bin := binaries(t)
	dir := t.TempDir()
	model := hubtest.Bytes(31, 6<<20)
	files := map[string][]byte{"model.safetensors": model, "config.json": []byte(`{"architectures": ["Drama3"]}` + "\n")}
	srv, url := hubtest.Mirror(t, filepath.Join(dir, "mirror"), "test/drama-up", upCommit, files, 1<<20)
	srv.BytesPerSec = 2 << 20 // a fetch long enough to be interrupted
	p := &pins.Pins{Format: pins.Format, Variant: "full", Repo: "test/drama-up", RepoType: "model", Revision: upCommit,
		License: "Test Licence", Engine: "cuda"}
	for _, name := range []string{"config.json", "model.safetensors"} {
		sum := sha256.Sum256(files[name])
		p.Files = append(p.Files, pins.File{Path: name, Size: int64(len(files[name])), SHA256: hex.EncodeToString(sum[:]), LFS: len(files[name]) >= 1<<20})
	}
	pinsPath := filepath.Join(dir, "pins.json")
	if err := p.WriteFile(pinsPath); err != nil {
		t.Fatal(err)
	}
	fx := buildtest.New(t)
	data, err := fx.Sources(t, fx.Good).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sources := filepath.Join(dir, "sources.json")
	os.WriteFile(sources, data, 0o644)
	fake := filepath.Join(dir, "fakebin")
	os.MkdirAll(fake, 0o755)
	os.WriteFile(filepath.Join(fake, "nvidia-smi"), []byte("#!/bin/sh\necho 'NVIDIA Test GPU'\n"), 0o755)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DRAMA_API_KEY=") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HF_") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+fake+":"+bin+":"+os.Getenv("PATH"), "HOME="+dir, "HF_HUB_CACHE="+filepath.Join(dir, "cache"),
		"GIT_CONFIG_GLOBAL="+os.DevNull, "TENSORFOLD_STANDIN_LOAD_TIME=50ms")
	root := filepath.Join(dir, "root")
	return &upFixture{bin: bin, dir: dir, root: root, env: env, model: model, total: p.TotalBytes(), served: func() int64 { return srv.Stats().BytesServed },
		args: []string{"up", "--root", root, "--variant", "full", "--pins", pinsPath, "--endpoint", url, "--accept-license",
			"--sources", sources, "--source", fx.Mirror, "--zig", fx.Zig, "--nvcc", fx.NVCC,
			"--plugin-dir", bin, "--addr", freeAddr(t), "--grace", "3s"}}
}

type upRun struct {
	cmd            *exec.Cmd
	stdout, stderr *enginetest.Buffer
	done           chan struct{}
	err            error
}

func (fx *upFixture) start(t *testing.T, extraEnv []string, extra ...string) *upRun {
	t.Helper()
	cmd := exec.Command(filepath.Join(fx.bin, "drama"), append(append([]string{}, fx.args...), extra...)...)
	cmd.Env = append(append([]string{}, fx.env...), extraEnv...)
	cmd.Dir = fx.dir
	r := &upRun{cmd: cmd, stdout: &enginetest.Buffer{}, stderr: &enginetest.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// until waits for cond, failing the test if the run ends first.
func (r *upRun) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ended := false
	met := enginetest.Within(90*time.Second, func() bool {
		select {
		case <-r.done:
			ended = true
			return true
		default:
			return cond()
		}
	})
	if ended && !cond() {
		t.Fatalf("drama up ended (%v) before %s\nstdout:\n%s\nstderr:\n%s", r.err, what, r.stdout, r.stderr)
	}
	if !met {
		t.Fatalf("no %s within 90 s\nstderr:\n%s", what, r.stderr)
	}
}

func (r *upRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		r.cmd.Process.Kill()
		t.Fatalf("drama up did not end\n%s", r.stderr)
	}
	if ee, ok := r.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return 0
}

var sayLine = regexp.MustCompile(`(?m)^say: +(.+)$`)

// speakAsPrinted runs the drama say line drama up printed, as a shell
// would, and checks the WAV it wrote.
func (fx *upFixture) speakAsPrinted(t *testing.T, r *upRun) {
	t.Helper()
	var line string
	r.until(t, "the drama say line", func() bool {
		m := sayLine.FindStringSubmatch(r.stdout.String())
		if m != nil {
			line = m[1]
		}
		return m != nil
	})
	os.Remove(filepath.Join(fx.dir, "hello.wav"))
	say := exec.Command("sh", "-c", line)
	say.Env, say.Dir = fx.env, fx.dir
	if out, err := say.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	wav, err := os.ReadFile(filepath.Join(fx.dir, "hello.wav"))
	if err != nil || !bytes.HasPrefix(wav, []byte("RIFF")) || len(wav) < 1000 {
		t.Fatalf("%s wrote no WAV: %v (%d bytes)", line, err, len(wav))
	}
}

// stop interrupts a serving drama up, which drains drama serve and ends 0.
func (r *upRun) stop(t *testing.T) {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGINT)
	if code := r.wait(t); code != 0 {
		t.Fatalf("drama up stopped by SIGINT while serving: exit %d\n%s", code, r.stderr)
	}
}

// TestUpFromNothingToSpeech takes an empty root to speech with drama up:
// a dry run first, then a run interrupted (SIGINT) and one killed (kill
// -9) in the fetch, and again in the engine build, each resumed by the
// same command; the finished run serves, and the drama say line it prints
// works as printed. On the finished root every step is skipped.
func TestUpFromNothingToSpeech(t *testing.T) {
	fx := newUpFixture(t)

	dry := fx.start(t, nil, "--dry-run")
	if code := dry.wait(t); code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, dry.stdout, dry.stderr)
	}
	for _, want := range []string{"fetch\trun\t" + strconv.FormatInt(fx.total, 10), "zig 0.17.0", "verify\trun", "serve\trun"} {
		if !strings.Contains(dry.stdout.String(), want) {
			t.Errorf("dry run: no %q in\n%s", want, dry.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(fx.root, "full")); !os.IsNotExist(err) {
		t.Errorf("the dry run made %s: %v", filepath.Join(fx.root, "full"), err)
	}

	// SIGINT in the fetch: exit 130 and the command that goes on.
	r := fx.start(t, nil)
	r.until(t, "a fetch under way", func() bool { return fx.served() > 1<<20 })
	r.cmd.Process.Signal(syscall.SIGINT)
	if code := r.wait(t); code != 130 || !strings.Contains(r.stderr.String(), "to go on: drama up") || !strings.Contains(r.stderr.String(), "up: fetch    failed: interrupted") {
		t.Fatalf("SIGINT in the fetch: exit %d\n%s", code, r.stderr)
	}
	// kill -9 in the fetch, once more bytes came
	before := fx.served()
	r = fx.start(t, nil)
	r.until(t, "the fetch resumed", func() bool { return fx.served() > before+1<<20 })
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.wait(t)

	// SIGINT, then kill -9, in the engine build (the fixture build pauses
	// half way with BUILDTEST_PAUSE).
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		pause := filepath.Join(t.TempDir(), "paused")
		r = fx.start(t, []string{buildtest.PauseEnv + "=" + pause})
		r.until(t, "the build paused", func() bool { _, err := os.Stat(pause); return err == nil })
		if !strings.Contains(r.stderr.String(), "up: verify   done") && !strings.Contains(r.stderr.String(), "up: verify   skipped") {
			t.Errorf("no verify line before the build\n%s", r.stderr)
		}
		r.cmd.Process.Signal(sig)
		code := r.wait(t)
		if sig == syscall.SIGINT && (code != 130 || !strings.Contains(r.stderr.String(), "up: engine   failed: interrupted")) {
			t.Fatalf("SIGINT in the build: exit %d\n%s", code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(build.Dir(fx.root, "full"), build.SumsName)); !os.IsNotExist(err) {
			t.Fatalf("an engine recorded after %v in the build: %v", sig, err)
		}
	}

	// The same command goes on: the build (installing the stand-in), then
	// drama serve; the drama say line works as printed.
	r = fx.start(t, []string{buildtest.EngineEnv + "=" + filepath.Join(fx.bin, "tensorfold-standin")})
	fx.speakAsPrinted(t, r)
	for _, want := range []string{"up: licence  skipped", "up: fetch    skipped: every pinned file", "up: engine   done", "up: qualify  skipped: not asked"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("resumed run: no %q in\n%s", want, r.stderr)
		}
	}
	r.stop(t)
	got, err := os.ReadFile(filepath.Join(fx.root, "full", "model.safetensors"))
	if err != nil || !bytes.Equal(got, fx.model) {
		t.Fatalf("the fetched model differs from the Hub's: %v", err)
	}

	// The finished root: every step but serve skipped, nothing fetched.
	served := fx.served()
	r = fx.start(t, nil)
	fx.speakAsPrinted(t, r)
	for _, step := range []string{"licence", "fetch", "verify", "engine", "qualify"} {
		if !regexp.MustCompile(`up: ` + step + ` +skipped: `).MatchString(r.stderr.String()) {
			t.Errorf("finished root: %s not skipped\n%s", step, r.stderr)
		}
	}
	r.stop(t)
	if fx.served() != served {
		t.Errorf("the run on the finished root fetched %d bytes", fx.served()-served)
	}
}

// TestUpRefusesEarly: a host that cannot run the variant (no GPU for the
// CUDA engine, a wrong compiler) is refused before anything is fetched,
// each refusal with its fix; --dry-run lists the same refusals.
func TestUpRefusesEarly(t *testing.T) {
	fx := newUpFixture(t)
	for i, kv := range fx.env {
		if strings.HasPrefix(kv, "PATH=") {
			fx.env[i] = "PATH=" + fx.bin + ":" + os.Getenv("PATH") // no nvidia-smi
		}
	}
	wrongZig := filepath.Join(t.TempDir(), "zig")
	os.WriteFile(wrongZig, []byte("#!/bin/sh\necho 0.11.0\n"), 0o755)
	for _, extra := range [][]string{{"--zig", wrongZig}, {"--zig", wrongZig, "--dry-run"}} {
		r := fx.start(t, nil, extra...)
		code := r.wait(t)
		out := r.stderr.String()
		if code != 1 || !strings.Contains(out, "gpu: the full variant runs on a CUDA GPU and none is visible") ||
			!strings.Contains(out, "--engine-bin bin/tensorfold-standin") ||
			!strings.Contains(out, "compiler: engine build: zig") || !strings.Contains(out, "then name it with --zig or ZIG") {
			t.Errorf("%v: exit %d\n%s", extra, code, out)
		}
		if strings.Contains(out, "up: licence") || fx.served() != 0 {
			t.Errorf("%v: a step was taken before the refusal (%d bytes fetched)\n%s", extra, fx.served(), out)
		}
	}
}
