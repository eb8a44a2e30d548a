package doctorcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/drama-tts/drama/internal/atomicfile"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/pins/hub/hubtest"
)

type buf interface{ String() string }

const gib = 1 << 30

// fixture: nvfp4 installed, a cuda plugin with its checksum file, an engine
// binary with its sha256 recorded, an H200 with room, ffmpeg, a left-over
// temporary file.
func fixture(t *testing.T) (*Options, *cmdutil.IOStreams, *hubtest.Layout) {
	x := hubtest.New(t)
	x.Install("nvfp4", "o/pruned", "1111111111111111111111111111111111111111", false, map[string]string{"model.safetensors": "w"})
	bin := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(bin, 0o755)
	writeWithSum(t, filepath.Join(bin, "drama-engine-cuda"), "plugin", filepath.Join(bin, "drama-engine-cuda.sha256"), "drama-engine-cuda")
	eng := filepath.Join(x.Root, "engine")
	os.MkdirAll(eng, 0o755)
	writeWithSum(t, filepath.Join(eng, "tensorfold-native"), "engine", filepath.Join(eng, "engine.sha256"), "tensorfold-native")
	os.WriteFile(filepath.Join(x.Root, "nvfp4", ".pins.lock.json.tmp-123"), []byte("x"), 0o644)
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "HF_HUB_CACHE", x.Cache.Dir, "HOME", t.TempDir())
	f.Global.Root = x.Root
	probe := Probe{
		Executable: func() (string, error) { return filepath.Join(bin, "drama"), nil },
		LookPath: func(name string) (string, error) {
			if name == "nvidia-smi" || name == "ffmpeg" {
				return "/usr/bin/" + name, nil
			}
			return "", errors.New("not found")
		},
		Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
			if strings.HasSuffix(name, "nvidia-smi") {
				return []byte("NVIDIA H200, 143771, 140000\n"), nil
			}
			return []byte("ffmpeg version 7.1 Copyright\nmore\n"), nil
		},
		Memory:    func() (native.Memory, error) { return native.Memory{Available: 100 * gib, Source: "MemAvailable"}, nil },
		FreeBytes: func(string) (uint64, error) { return 500 * gib, nil },
		GOOS:      "linux", GOARCH: "amd64",
	}
	return &Options{F: f, Probe: probe}, ios, x
}

func writeWithSum(t *testing.T, path, content, sumPath, name string) {
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	if err := os.WriteFile(sumPath, []byte(hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDoctorHealthyPiped(t *testing.T) {
	opts, ios, x := fixture(t)
	if err := run(context.Background(), opts); err != nil {
		t.Fatalf("%v\n%s", err, ios.ErrOut.(buf).String())
	}
	out := ios.Out.(buf).String()
	for _, want := range []string{
		"drama\tok\ttest, go",
		"root\tok\t" + x.Root + "\n",
		"plugin cuda\tok\t",
		"engine cuda\tok\t" + filepath.Join(x.Root, "engine", "tensorfold-native") + ", sha256 ",
		"gpu\tok\tNVIDIA H200 (140.4 GiB, 136.7 GiB free)\n",
		"memory nvfp4\tok\twant 3.0 GiB, have 100.0 GiB available (MemAvailable)\n",
		"disk nvfp4\tok\tinstalled",
		"ffmpeg\tok\t/usr/bin/ffmpeg: ffmpeg version 7.1 Copyright\n",
		"temporary files\tnote\t1 left by an interrupted write: " + filepath.Join(x.Root, "nvfp4", ".pins.lock.json.tmp-123"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "CHECK") {
		t.Error("headers when piped")
	}
}

func TestDoctorProblemsTTYAndExit1(t *testing.T) {
	opts, ios, x := fixture(t)
	ios.SetStdoutTTY(true)
	opts.Probe.Memory = func() (native.Memory, error) { return native.Memory{Available: 2 * gib, Source: "MemAvailable"}, nil }
	os.WriteFile(filepath.Join(x.Root, "engine", "tensorfold-native"), []byte("another engine"), 0o755)
	err := run(context.Background(), opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitFailure || !strings.Contains(err.Error(), "2 problems") {
		t.Fatalf("err = %v", err)
	}
	out := ios.Out.(buf).String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "CHECK ") || strings.Contains(out, "\t") {
		t.Fatalf("tty:\n%s", out)
	}
	col := strings.Index(lines[0], "STATUS")
	var problems int
	for _, l := range lines[1:] {
		if strings.HasPrefix(l[col:], "problem ") {
			problems++
		}
	}
	if problems != 2 {
		t.Fatalf("want 2 problem rows:\n%s", out)
	}
	errOut := ios.ErrOut.(buf).String()
	for _, want := range []string{
		"fix: free memory, or pass drama serve --variant nvfp4 --admission external",
		"fix: put back the recorded binary, or if you trust this one: sha256sum " + filepath.Join(x.Root, "engine", "tensorfold-native"),
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("missing %q in\n%s", want, errOut)
		}
	}
}

func TestDoctorJSONNothingInstalled(t *testing.T) {
	opts, ios, _ := fixture(t)
	root := t.TempDir()
	opts.F.Global.Root = root
	opts.F.Global.JSON = true
	opts.Probe.LookPath = func(string) (string, error) { return "", errors.New("not found") }
	opts.Probe.FreeBytes = func(string) (uint64, error) { return 10 * gib, nil }
	err := run(context.Background(), opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitFailure {
		t.Fatalf("err = %v", err)
	}
	var rep Report
	if err := json.Unmarshal([]byte(ios.Out.(buf).String()), &rep); err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Variants, ",") != "full,nvfp4" || rep.Root != root {
		t.Fatalf("variants %v root %s", rep.Variants, rep.Root)
	}
	byName := map[string]Check{}
	for _, c := range rep.Checks {
		byName[c.Check] = c
	}
	for name, want := range map[string]Status{"gpu": Problem, "engine cuda": Problem, "disk full": Problem, "disk nvfp4": Problem, "ffmpeg": Note, "plugin cuda": OK} {
		if byName[name].Status != want {
			t.Errorf("%s: %+v, want %s", name, byName[name], want)
		}
	}
	if fix := byName["disk full"].Fix; !strings.Contains(fix, "drama fetch --variant full --root "+root) {
		t.Errorf("disk fix %q does not repeat --root", fix)
	}
	if fix := byName["engine cuda"].Fix; !strings.Contains(fix, "--engine-bin PATH --root "+root) {
		t.Errorf("engine fix %q", fix)
	}
	if rep.Problems != 4 {
		t.Errorf("problems %d: %+v", rep.Problems, rep.Checks)
	}
}

func TestDoctorVariantFlagAndMetal(t *testing.T) {
	opts, ios, _ := fixture(t)
	opts.VariantSet, opts.F.Global.Variant = true, "macos"
	err := run(context.Background(), opts)
	out := ios.Out.(buf).String()
	if err == nil || !strings.Contains(out, "metal\tproblem\tno Metal on linux/amd64") || !strings.Contains(out, "plugin metal\tproblem\tno drama-engine-metal in ") {
		t.Fatalf("err %v\n%s", err, out)
	}
}

// TestDoctorTemporariesByOwner tells a killed run's temporaries (a file and
// a quantize directory, with their size) from a live run's.
func TestDoctorTemporariesByOwner(t *testing.T) {
	opts, ios, x := fixture(t)
	ended := exec.Command(os.Args[0], "-test.run=^$")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(ended.Process.Pid)
	deadDir := filepath.Join(x.Root, ".nvfp4-small"+atomicfile.Marker+dead+"-1-7")
	os.MkdirAll(filepath.Join(deadDir, "sub"), 0o755)
	os.WriteFile(filepath.Join(deadDir, "sub", "model.safetensors"), make([]byte, 2048), 0o644)
	os.WriteFile(filepath.Join(x.Root, "nvfp4", ".model.safetensors"+atomicfile.Marker+dead+"-1-8"), make([]byte, 1024), 0o644)
	var livePath string
	err := atomicfile.Write(filepath.Join(x.Root, "nvfp4", "state.json"), 0, func(f *os.File) error {
		livePath = f.Name()
		return run(context.Background(), opts)
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, ios.ErrOut.(buf).String())
	}
	out := ios.Out.(buf).String()
	for _, want := range []string{
		"temporary files\tnote\t2 (3.0 KiB) left by a killed run: ",
		deadDir,
		"temporary files\tok\t1 being written by a running drama: " + livePath + " (pid " + strconv.Itoa(os.Getpid()) + ")",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, filepath.Join(deadDir, "sub")) {
		t.Errorf("reported inside a temporary directory:\n%s", out)
	}
}

// With DRAMA_ENGINE_BIN naming the stand-in, which loads no model, a host
// without a GPU and with little memory has no problem; the record's fix
// makes the folder it writes in.
func TestDoctorStandInNeedsNoGPUNorMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stand-in")
	}
	standin := filepath.Join(t.TempDir(), "tensorfold-standin")
	if out, err := exec.Command("go", "build", "-o", standin, cmdutil.StandInPackage).CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in: %v\n%s", err, out)
	}
	opts, ios, x := fixture(t)
	os.RemoveAll(filepath.Join(x.Root, "engine"))
	getenv := opts.F.Getenv
	opts.F.Getenv = func(k string) string {
		if k == "DRAMA_ENGINE_BIN" {
			return standin
		}
		return getenv(k)
	}
	opts.Probe.LookPath = func(name string) (string, error) { return "", errors.New("not found") }
	opts.Probe.Memory = func() (native.Memory, error) { return native.Memory{Available: 2 * gib, Source: "MemAvailable"}, nil }
	if err := run(context.Background(), opts); err != nil {
		t.Fatalf("%v\n%s", err, ios.ErrOut.(buf).String())
	}
	out, errOut := ios.Out.(buf).String(), ios.ErrOut.(buf).String()
	for _, want := range []string{
		"gpu\tnote\tno NVIDIA GPU visible: nvidia-smi is not on PATH; the engine is the stand-in, which needs none",
		"memory nvfp4\tnote\t",
		"the stand-in loads no model",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	rec := filepath.Join(x.Root, "engine", "engine.sha256")
	fix := "record it: mkdir -p " + filepath.Dir(rec) + " && sha256sum " + standin + " > " + rec
	if !strings.Contains(errOut, fix) {
		t.Fatalf("missing %q in\n%s", fix, errOut)
	}
	// The fix runs as printed.
	if out, err := exec.Command("sh", "-c", strings.TrimPrefix(fix, "record it: ")).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", fix, err, out)
	}
	if sum, err := cmdutil.EngineRecord(x.Root); err != nil || sum == "" {
		t.Fatalf("record after the fix: %q %v", sum, err)
	}
}

// One problem is "1 problem"; without the stand-in, no GPU is a problem.
func TestDoctorCountsProblemsInWords(t *testing.T) {
	opts, _, _ := fixture(t)
	opts.Probe.LookPath = func(name string) (string, error) { return "", errors.New("not found") }
	err := run(context.Background(), opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitFailure || !strings.Contains(err.Error(), "doctor found 1 problem, with its fix") {
		t.Fatalf("err = %v", err)
	}
}
