package build_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/build/buildtest"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/pins"
)

// childEnv makes the test binary run one Install and exit (the kill -9
// test's child), printing each step it starts as "step NAME".
const childEnv = "BUILD_TEST_CHILD"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		os.Exit(child(cfg))
	}
	os.Exit(m.Run())
}

type childConfig struct {
	Root, Source, Zig, NVCC, Sources string
}

func child(cfg string) int {
	var c childConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		return 2
	}
	s, err := pins.ReadSourcesFile(c.Sources)
	if err != nil {
		return 2
	}
	o := build.Options{Root: c.Root, Source: c.Source, Zig: c.Zig, NVCC: c.NVCC, Sources: s, Env: os.Environ(),
		Step: func(e build.StepEvent) {
			if e.Status == "start" {
				os.Stdout.WriteString("step " + e.Step + "\n")
			}
		}}
	if _, err := build.Install(context.Background(), o); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	return 0
}

func options(t *testing.T, fx *buildtest.Fixture, s *pins.Sources) (build.Options, *[]build.StepEvent) {
	t.Helper()
	var steps []build.StepEvent
	return build.Options{Root: t.TempDir(), Sources: s, Source: fx.Mirror, Zig: fx.Zig, NVCC: fx.NVCC,
		Env:  append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null"),
		Step: func(e build.StepEvent) { steps = append(steps, e) }}, &steps
}

func status(steps []build.StepEvent, step string) []string {
	var out []string
	for _, e := range steps {
		if e.Step == step {
			out = append(out, e.Status)
		}
	}
	return out
}

func TestInstallBuildsRecordsAndLeavesCheckoutsClean(t *testing.T) {
	fx := buildtest.New(t)
	o, steps := options(t, fx, fx.Sources(t, fx.Good))
	rec, err := build.Install(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	dir := build.Dir(o.Root, "full")
	bin := filepath.Join(dir, "tensorfold-native")
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "tensorfold-native "+fx.PatchedHead {
		t.Errorf("built binary says %q, want it built at the patched HEAD %s", got, fx.PatchedHead)
	}
	if rec.Head != fx.PatchedHead || rec.PatchedHead != fx.PatchedHead || rec.Upstream.Commit != fx.Base || rec.Recipe.Commit != fx.Good {
		t.Errorf("record: %+v", rec)
	}
	if rec.Recipe.FetchedFrom != fx.Recipe {
		t.Errorf("recipe fetched from %q, want the mirror's clone %q", rec.Recipe.FetchedFrom, fx.Recipe)
	}
	sum := buildtest.SHA256(t, bin)
	sums, err := os.ReadFile(filepath.Join(dir, build.SumsName))
	if err != nil {
		t.Fatal(err)
	}
	if string(sums) != sum+"  tensorfold-native\n" {
		t.Errorf("engine.sha256 = %q, want %q", sums, sum+"  tensorfold-native\n")
	}
	got, err := build.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Binaries) != 1 || got.Binaries[0].SHA256 != sum {
		t.Errorf("engine.json binaries = %+v, want sha256 %s", got.Binaries, sum)
	}
	completed := 0
	for _, f := range got.Files {
		if f.Completed {
			completed++
		}
		if len(f.SHA256) != 64 {
			t.Errorf("pinned file %s recorded without a digest", f.Path)
		}
	}
	if completed != 6 || len(got.Files) != 8 {
		t.Errorf("files: %d recorded, %d completed from the checkout; want 8 and 6", len(got.Files), completed)
	}
	for _, repo := range []string{"drama-tensorfold", "TensorFold"} {
		st, err := exec.Command("git", "-C", filepath.Join(build.WorkDir(o.Root, "full"), repo), "status", "--porcelain").Output()
		if err != nil || len(st) != 0 {
			t.Errorf("%s checkout not clean after the build: %q %v", repo, st, err)
		}
	}
	states, err := build.Check(dir, got)
	if err != nil || len(states) != 1 || states[0].State != build.StateOK {
		t.Errorf("Check = %+v, %v; want ok", states, err)
	}
	for _, step := range []string{"toolchain", "fetch drama-tensorfold", "files", "series", "fetch TensorFold", "patch", "build", "install"} {
		if s := status(*steps, step); len(s) != 2 || s[1] != "done" {
			t.Errorf("step %s: %v, want start and done", step, s)
		}
	}

	// A second run finds every step done and installs the same binary;
	// a temporary file left by an install killed while copying goes.
	leftover := filepath.Join(dir, ".tensorfold-native.tmp-123")
	os.WriteFile(leftover, []byte("half"), 0o644)
	*steps = nil
	if _, err := build.Install(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"fetch drama-tensorfold", "patch", "build"} {
		if s := status(*steps, step); len(s) != 1 || s[0] != "skipped" {
			t.Errorf("second run, step %s: %v, want skipped", step, s)
		}
	}
	if buildtest.SHA256(t, bin) != sum {
		t.Error("second run changed the binary")
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover temporary file kept: %v", err)
	}
}

func TestInstallFromBundle(t *testing.T) {
	fx := buildtest.New(t)
	bundle := filepath.Join(t.TempDir(), "engine.bundle")
	// One bundle with both repositories' histories.
	for _, cmd := range [][]string{
		{"git", "-C", fx.Recipe, "fetch", "-q", fx.Upstream, "+refs/heads/*:refs/heads/tensorfold/*"},
		{"git", "-C", fx.Recipe, "bundle", "create", "-q", bundle, "--all"},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, out)
		}
	}
	o, _ := options(t, fx, fx.Sources(t, fx.Good))
	o.Source = bundle
	rec, err := build.Install(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Upstream.FetchedFrom != bundle || rec.Head != fx.PatchedHead {
		t.Errorf("record: upstream from %q, head %s", rec.Upstream.FetchedFrom, rec.Head)
	}
}

func TestInstallFromBaseURL(t *testing.T) {
	fx := buildtest.New(t)
	o, _ := options(t, fx, fx.Sources(t, fx.Good))
	o.Source = "file://" + fx.Mirror
	rec, err := build.Install(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := o.Source + "/TensorFold"; rec.Upstream.FetchedFrom != want {
		t.Errorf("upstream fetched from %q, want %q", rec.Upstream.FetchedFrom, want)
	}
}

// installFlag is a flag of drama engine install (and its global ones):
// naming one is the command's advice, never this package's.
var installFlag = regexp.MustCompile(`--(source|sources|zig|nvcc|patch|head|lock-wait|variant|root)([^\w-]|$)`)

// TestInstallRefuses: each refusal is its typed error, says what is wrong
// and what to do, and names no command-line flag.
func TestInstallRefuses(t *testing.T) {
	fx := buildtest.New(t)
	wrongZig := buildtest.FakeZig(t, t.TempDir(), "0.16.0")
	oldNVCC := buildtest.FakeNVCC(t, t.TempDir(), "12.8")
	cases := []struct {
		name   string
		edit   func(*pins.Sources, *build.Options)
		target any
		want   []string
	}{
		{"wrong commit", func(s *pins.Sources, _ *build.Options) { s.Recipe.Commit = strings.Repeat("ab", 20) },
			new(*build.CommitError), []string{"commit " + strings.Repeat("ab", 20) + " is not in", "fetch from a mirror that holds the pinned commit"}},
		{"unreachable source", func(_ *pins.Sources, o *build.Options) { o.Source = "http://127.0.0.1:1/git" },
			new(*build.CommitError), []string{"could not fetch commit " + fx.Good + " from http://127.0.0.1:1/git/drama-tensorfold.git", "check the network", "or fetch from a mirror"}},
		{"changed pinned file", func(s *pins.Sources, _ *build.Options) {
			for i := range s.Recipe.Files {
				if s.Recipe.Files[i].Path == "NOTICE" {
					s.Recipe.Files[i].SHA256 = strings.Repeat("0", 64)
				}
			}
		}, new(*build.FileError), []string{"pinned file", "NOTICE: sha256: want " + strings.Repeat("0", 64), "check the mirror it was fetched from, or the pins"}},
		{"patch with the wrong sha256", func(s *pins.Sources, _ *build.Options) { s.Recipe.Commit = fx.Tampered },
			new(*build.FileError), []string{"upstream patch", "0001-engine-fuse-the-kernels.patch: sha256: want"}},
		{"HEAD mismatch after the series", func(s *pins.Sources, _ *build.Options) { s.PatchedHead = fx.OperatorHead },
			new(*build.HeadError), []string{"HEAD after upstream's patch series: want " + fx.OperatorHead + ", got " + fx.PatchedHead}},
		{"HEAD mismatch after operator patches", func(_ *pins.Sources, o *build.Options) {
			o.Patches = []build.Patch{{File: fx.OperatorPatch, SHA256: fx.OperatorSHA256}}
			o.Head = fx.PatchedHead
		}, new(*build.HeadError), []string{"HEAD after your patches: want " + fx.PatchedHead + ", got " + fx.OperatorHead, "having reviewed the result, name " + fx.OperatorHead + " as the HEAD they give"}},
		{"operator patch without its HEAD", func(_ *pins.Sources, o *build.Options) {
			o.Patches = []build.Patch{{File: fx.OperatorPatch, SHA256: fx.OperatorSHA256}}
		}, new(error), []string{"operator patches need the HEAD they give, as a full 40-hex commit"}},
		{"operator patch with the wrong sha256", func(_ *pins.Sources, o *build.Options) {
			o.Patches = []build.Patch{{File: fx.OperatorPatch, SHA256: strings.Repeat("1", 64)}}
			o.Head = fx.OperatorHead
		}, new(*build.FileError), []string{"patch " + fx.OperatorPatch + ": sha256: want " + strings.Repeat("1", 64)}},
		{"failing build", func(s *pins.Sources, _ *build.Options) { *s = *fx.Sources(t, fx.Broken) },
			new(*build.BuildError), []string{"build failed: exit status 1", "build.log, ending:", `identifier "__fused_mma" is undefined`, "1 error detected"}},
		{"build that dirties the engine checkout", func(s *pins.Sources, _ *build.Options) { *s = *fx.Sources(t, fx.Dirty) },
			new(*build.BuildError), []string{"it changed tracked files of the TensorFold checkout", "M src/engine.txt"}},
		{"missing zig", func(_ *pins.Sources, o *build.Options) { o.Zig = "/nonexistent/zig" },
			new(*build.ToolchainError), []string{"zig: not found at /nonexistent/zig", "install Zig 0.17.0"}},
		{"wrong zig", func(_ *pins.Sources, o *build.Options) { o.Zig = wrongZig },
			new(*build.ToolchainError), []string{"want version 0.17.0, got 0.16.0"}},
		{"missing nvcc", func(_ *pins.Sources, o *build.Options) { o.NVCC = "/nonexistent/nvcc" },
			new(*build.ToolchainError), []string{"nvcc: not found at /nonexistent/nvcc", "install CUDA 13"}},
		{"wrong nvcc", func(_ *pins.Sources, o *build.Options) { o.NVCC = oldNVCC },
			new(*build.ToolchainError), []string{"want version 13.x, got 12.8"}},
	}
	// The facts a caller's advice is made of, by case.
	facts := map[string]func(err error) bool{
		"missing zig": func(err error) bool {
			var e *build.ToolchainError
			return errors.As(err, &e) && *e == build.ToolchainError{Tool: build.ToolZig, Path: "/nonexistent/zig", Want: "0.17.0",
				Fix: "install Zig 0.17.0", Env: "ZIG", Default: build.DefaultZig("0.17.0")}
		},
		"wrong nvcc": func(err error) bool {
			var e *build.ToolchainError
			return errors.As(err, &e) && *e == build.ToolchainError{Tool: build.ToolNVCC, Path: oldNVCC, Want: "13.x", Got: "12.8",
				Fix: "install CUDA 13", Env: "NVCC", Default: build.DefaultNVCC}
		},
		"HEAD mismatch after operator patches": func(err error) bool {
			var e *build.HeadError
			return errors.As(err, &e) && e.Operator && e.Want == fx.PatchedHead && e.Got == fx.OperatorHead
		},
		"HEAD mismatch after the series": func(err error) bool {
			var e *build.HeadError
			return errors.As(err, &e) && !e.Operator
		},
		"changed pinned file": func(err error) bool {
			var e *build.FileError
			return errors.As(err, &e) && e.Repo == "drama-tensorfold" && e.Commit == fx.Good
		},
		"patch with the wrong sha256": func(err error) bool {
			var e *build.FileError
			return errors.As(err, &e) && e.Repo == ""
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fx.Sources(t, fx.Good)
			o, steps := options(t, fx, s)
			c.edit(s, &o)
			_, err := build.Install(context.Background(), o)
			if err == nil {
				t.Fatal("install succeeded")
			}
			if !errors.As(err, c.target) {
				t.Errorf("error %T %v, want a %T", err, err, c.target)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if flag := installFlag.FindString(err.Error()); flag != "" {
				t.Errorf("error %q names the flag %s", err, flag)
			}
			if f := facts[c.name]; f != nil && !f(err) {
				t.Errorf("error %#v does not carry the facts of the refusal", err)
			}
			if _, err := os.Stat(filepath.Join(build.Dir(o.Root, "full"), build.RecordName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a record was written: %v", err)
			}
			if strings.Contains(c.name, "zig") || strings.Contains(c.name, "nvcc") || strings.Contains(c.name, "operator patch ") {
				// Refused before any download.
				if len(status(*steps, "fetch drama-tensorfold")) != 0 {
					t.Error("fetched before the refusal")
				}
				if _, err := os.Stat(build.WorkDir(o.Root, "full")); !errors.Is(err, os.ErrNotExist) {
					t.Error("work directory made before the refusal")
				}
			}
		})
	}
}

func TestInstallOperatorPatches(t *testing.T) {
	fx := buildtest.New(t)
	o, _ := options(t, fx, fx.Sources(t, fx.Good))
	o.Patches = []build.Patch{{File: fx.OperatorPatch, SHA256: fx.OperatorSHA256}}
	o.Head = fx.OperatorHead
	rec, err := build.Install(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Head != fx.OperatorHead || rec.PatchedHead != fx.PatchedHead || len(rec.Patches) != 1 || rec.Patches[0].SHA256 != fx.OperatorSHA256 {
		t.Errorf("record: head %s patched %s patches %+v", rec.Head, rec.PatchedHead, rec.Patches)
	}
	out, err := exec.Command(filepath.Join(build.Dir(o.Root, "full"), "tensorfold-native")).Output()
	if err != nil || !strings.Contains(string(out), fx.OperatorHead) {
		t.Errorf("binary says %q (%v), want it built at %s", out, err, fx.OperatorHead)
	}
	// Without the operator patch the series' HEAD is built again.
	o.Patches, o.Head = nil, ""
	rec, err = build.Install(context.Background(), o)
	if err != nil || rec.Head != fx.PatchedHead {
		t.Fatalf("rebuilt without the patch: head %v, %v", rec, err)
	}
}

func TestInstallResumesAfterKillMidBuild(t *testing.T) {
	fx := buildtest.New(t)
	s := fx.Sources(t, fx.Good)
	o, steps := options(t, fx, s)
	cfg, err := json.Marshal(childConfig{Root: o.Root, Source: o.Source, Zig: o.Zig, NVCC: o.NVCC, Sources: buildtest.WriteSources(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	pause := filepath.Join(t.TempDir(), "paused")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(cfg), buildtest.PauseEnv+"="+pause, "GIT_CONFIG_GLOBAL=/dev/null")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The fetches take what they take; from the build's start the fixture
	// reaches its pause at once.
	for sc := bufio.NewScanner(stdout); sc.Text() != "step build"; {
		if !sc.Scan() {
			cmd.Wait()
			t.Fatalf("the install ended before its build step: %s", stderr.String())
		}
	}
	enginetest.WaitFor(t, func() bool { _, err := os.Stat(pause); return err == nil })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The build dies with drama: nothing keeps writing into out/.
	pidData, err := os.ReadFile(pause)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidData)))
	if err != nil {
		t.Fatalf("pause file %q: %v", pidData, err)
	}
	gone := false
	defer func() {
		if !gone {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the build (pid %d) outlived drama's kill -9", pid)
		}
	}()
	enginetest.WaitFor(t, func() bool { gone = syscall.Kill(pid, 0) != nil; return gone })
	half := filepath.Join(build.WorkDir(o.Root, "full"), "out", "tensorfold-native")
	halfData, err := os.ReadFile(half)
	if err != nil {
		t.Fatalf("no half-built binary after the kill: %v", err)
	}
	if _, err := os.Stat(filepath.Join(build.Dir(o.Root, "full"), build.RecordName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a record exists after the kill: %v", err)
	}

	rec, err := build.Install(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s := status(*steps, "patch"); len(s) != 1 || s[0] != "skipped" {
		t.Errorf("patch step after the kill: %v, want skipped (done before the kill)", s)
	}
	if s := status(*steps, "build"); len(s) != 2 || s[1] != "done" {
		t.Errorf("build step after the kill: %v, want it run again", s)
	}
	bin := filepath.Join(build.Dir(o.Root, "full"), "tensorfold-native")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) == string(halfData) || !strings.Contains(string(data), "# voice references") {
		t.Errorf("installed binary is the half-built one:\n%s", data)
	}
	if rec.Binaries[0].SHA256 != buildtest.SHA256(t, bin) {
		t.Error("record does not match the installed binary")
	}
}

func TestInstallInterruptedBuildIsNotRecorded(t *testing.T) {
	fx := buildtest.New(t)
	o, _ := options(t, fx, fx.Sources(t, fx.Good))
	pause := filepath.Join(t.TempDir(), "paused")
	o.Env = append(o.Env, buildtest.PauseEnv+"="+pause)
	building := make(chan struct{})
	o.Step = func(e build.StepEvent) {
		if e.Step == "build" && e.Status == "start" {
			close(building)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := build.Install(ctx, o); done <- err }()
	select {
	case <-building:
	case err := <-done:
		t.Fatalf("the install ended before its build step: %v", err)
	}
	enginetest.WaitFor(t, func() bool { _, err := os.Stat(pause); return err == nil })
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted install: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(build.Dir(o.Root, "full"), build.SumsName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a record exists after the interrupt: %v", err)
	}
}

func TestCheckFindsChangedAndMissingBinaries(t *testing.T) {
	fx := buildtest.New(t)
	o, _ := options(t, fx, fx.Sources(t, fx.Good))
	if _, err := build.Install(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	dir := build.Dir(o.Root, "full")
	rec, err := build.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tensorfold-native")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho other\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := build.Check(dir, rec)
	if err != nil || st[0].State != build.StateChanged || !strings.Contains(st[0].Detail, "sha256: want "+rec.Binaries[0].SHA256) {
		t.Errorf("changed binary: %+v, %v", st, err)
	}
	os.Remove(bin)
	st, err = build.Check(dir, rec)
	if err != nil || st[0].State != build.StateMissing {
		t.Errorf("missing binary: %+v, %v", st, err)
	}
}

func TestReadRecordRefusesMalformedRecords(t *testing.T) {
	good := `{"format":"drama-engine/1","variant":"full","engine":"cuda","installed_at":"","recipe":{"name":"r","url":"u","commit":"c"},` +
		`"upstream":{"name":"u","url":"u","commit":"c"},"patched_head":"","patches":[PATCHES],"head":"","files":[],` +
		`"toolchain":{"zig":"","zig_version":""},"binaries":[BINS],"log":""}`
	sum := strings.Repeat("ab", 32)
	cases := map[string]struct{ patches, bins, want string }{
		"ok":             {"", `{"name":"tensorfold-native","size":1,"sha256":"` + sum + `"}`, ""},
		"no binaries":    {"", "", "no binaries recorded"},
		"path as a name": {"", `{"name":"../../bin/sh","size":1,"sha256":"` + sum + `"}`, `binaries[0]: want a plain file name`},
		"short sha256":   {"", `{"name":"tensorfold-native","size":1,"sha256":"abc"}`, `binaries[0]: want a plain file name and a 64-hex sha256`},
		"patch sha256": {`{"file":"p.patch","sha256":"x"}`, `{"name":"tensorfold-native","size":1,"sha256":"` + sum + `"}`,
			`patches[0].sha256: want 64 hex digits, got "x"`},
		"unknown field": {"", `{"name":"tensorfold-native","size":1,"sha256":"` + sum + `","extra":1}`, `unknown field "extra"`},
		"not json":      {"", `nonsense`, "invalid character"},
	}
	for name, c := range cases {
		dir := t.TempDir()
		data := strings.NewReplacer("PATCHES", c.patches, "BINS", c.bins).Replace(good)
		os.WriteFile(filepath.Join(dir, build.RecordName), []byte(data), 0o644)
		_, err := build.ReadRecord(dir)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, build.ErrMismatch) || !errors.Is(err, build.ErrBadRecord) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(dir, build.RecordName)) {
			t.Errorf("%s: %v, want a mismatch naming the file and %q", name, err, c.want)
		}
		if strings.Contains(err.Error(), "drama ") {
			t.Errorf("%s: %v: the command that mends it is the command's to say", name, err)
		}
	}
}
